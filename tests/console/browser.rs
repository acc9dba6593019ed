//! A headless Chromium driven over WebDriver: Debian's `chromium` and `chromium-driver`
//! (`cargo xtask ci` installs them), never a downloaded browser. Each test gets its own
//! chromedriver on a free port and its own empty profile; both go when the test ends.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";

/// How long a page gets to show what a test waits for.
const PATIENCE: Duration = Duration::from_secs(20);

/// chromedriver's process, stopped when dropped (a failing test too).
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A browser session.
pub struct Browser {
    pub client: Client,
    _driver: Driver,
    profile: PathBuf,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Browser {
    pub async fn start() -> Self {
        let driver =
            std::env::var("TOKENVAULT_CHROMEDRIVER").unwrap_or_else(|_| CHROMEDRIVER.into());
        let chromium = std::env::var("TOKENVAULT_CHROMIUM").unwrap_or_else(|_| CHROMIUM.into());
        assert!(
            std::path::Path::new(&driver).exists() && std::path::Path::new(&chromium).exists(),
            "the console tests need Debian's chromium and chromium-driver ({chromium}, {driver}): \
             apt-get install chromium chromium-driver (cargo xtask ci installs them)"
        );
        let port = free_port();
        let child = Command::new(&driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let driver = Driver(child);
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < PATIENCE, "chromedriver never listened");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let profile = std::env::temp_dir().join(format!("tv-chromium-{}", uuid::Uuid::new_v4()));
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("browserName".into(), json!("chrome"));
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({"binary": chromium, "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1280,1400",
                format!("--user-data-dir={}", profile.display()),
            ]}),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("a browser session");
        Self {
            client,
            _driver: driver,
            profile,
        }
    }

    pub async fn stop(self) {
        let _ = self.client.close().await;
        let _ = std::fs::remove_dir_all(&self.profile);
    }

    /// Waits for `css` and clicks it.
    pub async fn click(&self, css: &str) {
        self.element(css)
            .await
            .click()
            .await
            .unwrap_or_else(|e| panic!("click {css}: {e}"));
    }

    /// Waits for `css`, empties it and types `text`.
    pub async fn type_into(&self, css: &str, text: &str) {
        let element = self.element(css).await;
        element
            .clear()
            .await
            .unwrap_or_else(|e| panic!("clear {css}: {e}"));
        element
            .send_keys(text)
            .await
            .unwrap_or_else(|e| panic!("type into {css}: {e}"));
    }

    /// The element `css`, once it is there.
    pub async fn element(&self, css: &str) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(PATIENCE)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css}: {e}"))
    }

    /// The text of `css` once it satisfies `ok`; panics with the last text seen otherwise.
    pub async fn text_until(&self, css: &str, ok: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        let mut last = String::new();
        while started.elapsed() < PATIENCE {
            if let Ok(element) = self.client.find(Locator::Css(css)).await
                && let Ok(text) = element.text().await
            {
                if ok(&text) {
                    return text;
                }
                last = text;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{css} never showed what was awaited; last: {last:?}");
    }

    /// Runs `script` in the page (WebDriver's own channel, not the page's: its CSP does not
    /// apply) with `args`; its JSON result.
    pub async fn script(&self, script: &str, args: Vec<Value>) -> Value {
        self.client
            .execute(script, args)
            .await
            .unwrap_or_else(|e| panic!("{script}: {e}"))
    }

    /// A screenshot, kept as `<name>.png` in `TOKENVAULT_CONSOLE_SCREENSHOTS` when set (how
    /// docs/console.md's pictures are made).
    pub async fn screenshot(&self, name: &str) {
        let png = self.client.screenshot().await.expect("a screenshot");
        assert!(png.starts_with(b"\x89PNG"), "{name} is a PNG");
        if let Ok(dir) = std::env::var("TOKENVAULT_CONSOLE_SCREENSHOTS") {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(PathBuf::from(dir).join(format!("{name}.png")), png).unwrap();
        }
    }
}
