//! `GET /ready`: 503 (problem+json naming the failed check) while the database or the code
//! workers are down, 200 again once they are back; `/health` (liveness) stays 200 throughout.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokenvault_persistence::testing::{Backend, backends};
use tokenvault_tests::{TestApp, code_worker, full_private, unique};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A TCP forwarder in front of PostgreSQL that the test can cut (every connection dropped,
/// new ones closed at once), as if the database had stopped, and restore.
struct Forwarder {
    addr: SocketAddr,
    open: Arc<AtomicBool>,
    links: Arc<std::sync::Mutex<Vec<JoinHandle<()>>>>,
    accept: JoinHandle<()>,
}

impl Forwarder {
    async fn start(target: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let open = Arc::new(AtomicBool::new(true));
        let links: Arc<std::sync::Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let accept = tokio::spawn({
            let open = open.clone();
            let links = links.clone();
            async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    if !open.load(Ordering::SeqCst) {
                        continue; // dropped: the client sees its connection closed
                    }
                    let target = target.clone();
                    let link = tokio::spawn(async move {
                        if let Ok(mut outbound) = TcpStream::connect(&target).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                    links.lock().unwrap().push(link);
                }
            }
        });
        Self {
            addr,
            open,
            links,
            accept,
        }
    }

    fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        for link in self.links.lock().unwrap().drain(..) {
            link.abort();
        }
    }

    fn restore(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.cut();
        self.accept.abort();
    }
}

async fn readiness(app: &TestApp) -> (u16, Value) {
    let res = app.get("/ready").await;
    let status = res.status().as_u16();
    (status, res.json().await.unwrap())
}

/// Polls `/ready` until it answers `status`, for at most 30 s.
async fn until_ready_is(app: &TestApp, status: u16) -> Value {
    for _ in 0..300 {
        let (now, body) = readiness(app).await;
        if now == status {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("/ready never answered {status}: {:?}", readiness(app).await);
}

/// The `host:port` of a database URL.
fn host_port(url: &str) -> &str {
    let rest = url.split_once('@').map_or(url, |(_, r)| r);
    let rest = rest.split_once("://").map_or(rest, |(_, r)| r);
    rest.split_once('/').map_or(rest, |(hp, _)| hp)
}

#[tokio::test]
async fn ready_answers_503_while_postgres_is_unreachable() {
    if !backends().contains(&Backend::Postgres) {
        return; // SQLite is a file of the process: it cannot become unreachable
    }
    let admin = std::env::var(tokenvault_persistence::testing::POSTGRES_ENV).unwrap();
    let real = host_port(&admin).to_string();
    let forwarder = Forwarder::start(real.clone()).await;
    let through = forwarder.addr.to_string();
    let app = TestApp::spawn_with(Backend::Postgres, |c| {
        let url = c.database.url.clone().unwrap();
        c.database.url = Some(url.replacen(&real, &through, 1));
    })
    .await;
    let (status, body) = readiness(&app).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "ready");
    assert_eq!(body["checks"]["database"], "ok");
    assert_eq!(body["checks"]["code_workers"], "ok");

    forwarder.cut();
    let body = until_ready_is(&app, 503).await;
    assert_eq!(body["status"], 503, "problem+json: {body}");
    assert_eq!(body["errors"]["database"], serde_json::json!(["down"]));
    assert!(body["errors"].get("code_workers").is_none(), "{body}");
    let text = body.to_string();
    assert!(
        !text.contains("postgres") && !text.contains(&through),
        "{text}"
    );
    let live = app.get("/health").await;
    assert_eq!(live.status(), 200, "liveness does not touch the database");

    forwarder.restore();
    let body = until_ready_is(&app, 200).await;
    assert_eq!(body["checks"]["database"], "ok");
    // And it serves again.
    let key = full_private(&app).await;
    let res = app
        .request_as(Some(&key), reqwest::Method::POST, "/tokens")
        .json(&serde_json::json!({"type": "token", "data": "back"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    app.stop().await;
}

/// A code worker that refuses to start while `mark` exists; it runs under the name `tag`
/// so the test can find its processes (and not another test's).
fn breakable_worker(mark: &std::path::Path, tag: &str) -> std::path::PathBuf {
    let script = std::env::temp_dir().join(format!("{tag}.sh"));
    std::fs::write(
        &script,
        format!(
            "#!/bin/bash\n[ -e '{}' ] && exit 3\nexec -a '{tag}' '{}' \"$@\"\n",
            mark.display(),
            code_worker().display()
        ),
    )
    .unwrap();
    let mut perms = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&script, perms).unwrap();
    script
}

/// Kills every process whose command line starts with `tag`.
fn kill_tagged(tag: &str) -> usize {
    let mut killed = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if cmdline.starts_with(tag.as_bytes()) {
            let status = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status()
                .unwrap();
            killed += usize::from(status.success());
        }
    }
    killed
}

#[tokio::test]
async fn ready_answers_503_while_no_code_worker_can_start() {
    for backend in backends() {
        let tag = unique("tv-ready-worker");
        let mark = std::env::temp_dir().join(format!("{tag}.broken"));
        let worker = breakable_worker(&mark, &tag);
        let app = TestApp::spawn_with(backend, |c| c.code.worker = Some(worker.clone())).await;
        let (status, body) = readiness(&app).await;
        assert_eq!(status, 200, "{body}");

        std::fs::write(&mark, b"").unwrap();
        assert!(kill_tagged(&tag) > 0, "the workers run under {tag}");
        let body = until_ready_is(&app, 503).await;
        assert_eq!(body["errors"]["code_workers"], serde_json::json!(["down"]));
        assert!(body["errors"].get("database").is_none(), "{body}");

        std::fs::remove_file(&mark).unwrap();
        let body = until_ready_is(&app, 200).await;
        assert_eq!(body["checks"]["code_workers"], "ok");
        app.stop().await;
        let _ = std::fs::remove_file(&worker);
    }
}

#[tokio::test]
async fn ready_needs_no_key_and_is_not_cached() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let res = app
            .request_as(None, reqwest::Method::GET, "/ready")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()["cache-control"], "no-store");
        app.stop().await;
    }
}
