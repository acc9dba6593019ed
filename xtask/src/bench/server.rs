//! The server under load and the measuring commands beside it: a release binary started on a
//! fresh database, asked over HTTP with curl, its audit backlog and peak memory read, and the
//! `tokenvault-bench` commands (`ceilings`, `fill`) of the same build.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::Value;

use super::{BOOTSTRAP_KEY, Options};
use crate::bench_db::fresh_postgres;
use crate::workspace::root;

pub(super) struct Server {
    child: Child,
    pub(super) base: String,
    /// `DATABASE_URL` of a PostgreSQL run (SQLite: the file in `data`).
    database_url: Option<String>,
    data: TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The server binary: `TOKENVAULT_BENCH_BIN` (another build, for before/after runs), else the
/// release build of this checkout.
fn binary() -> std::path::PathBuf {
    std::env::var_os("TOKENVAULT_BENCH_BIN")
        .map_or_else(|| root().join("target/release/tokenvault"), Into::into)
}

/// The measuring commands (`ceilings`, `fill`) of the same build as [`binary`]:
/// `tokenvault-bench` beside it, or, for a build older than that binary, its own hidden
/// commands. Given jemalloc's settings of the server (`crates/server/src/main.rs`).
fn measuring(args: &[&str]) -> Command {
    let server = binary();
    let tool = server.with_file_name("tokenvault-bench");
    let mut cmd = Command::new(if tool.exists() { tool } else { server });
    cmd.args(args)
        .env("_RJEM_MALLOC_CONF", "narenas:2,dirty_decay_ms:1000");
    cmd
}

pub(super) async fn start(db: &str) -> anyhow::Result<Server> {
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let data = std::env::temp_dir().join(format!("tokenvault-bench-{}-{db}", std::process::id()));
    std::fs::create_dir_all(&data)?;
    let data = TempDir(data);
    let mut cmd = Command::new(binary());
    cmd.arg("serve")
        .env("TOKENVAULT_DATA_DIR", &data.0)
        .env("TOKENVAULT_LISTEN", format!("127.0.0.1:{port}"))
        .env("TOKENVAULT_BOOTSTRAP_KEY", BOOTSTRAP_KEY)
        .env("TOKENVAULT_LOG", "warn")
        .env("TOKENVAULT_PROXY_ALLOW_HTTP", "true")
        .env("TOKENVAULT_PROXY_ALLOWED_HOSTS", "127.0.0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let database_url = if db == "postgres" || db == "citus" {
        Some(fresh_postgres(db, "http").await?)
    } else {
        None
    };
    match &database_url {
        Some(url) => cmd.env("DATABASE_URL", url),
        None => cmd.env_remove("DATABASE_URL"),
    };
    let child = cmd.spawn().context("start target/release/tokenvault")?;
    let server = Server {
        child,
        base: format!("http://127.0.0.1:{port}"),
        database_url,
        data,
    };
    let started = Instant::now();
    while curl(&server, "GET", "/health", None, None).is_err() {
        if started.elapsed() > Duration::from_secs(30) {
            bail!("the server did not become healthy");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(server)
}

/// The same machine's ceilings under HTTP, from `tokenvault-bench ceilings` on a fresh database:
/// (insert/s, read/s through the persistence adapter, AES-256-GCM encrypt+decrypt pairs/s).
pub(super) async fn ceilings(db: &str, o: &Options) -> anyhow::Result<Value> {
    let data =
        std::env::temp_dir().join(format!("tokenvault-ceilings-{}-{db}", std::process::id()));
    std::fs::create_dir_all(&data)?;
    let data = TempDir(data);
    let mut cmd = measuring(&[
        "ceilings",
        "--duration",
        &o.duration.to_string(),
        "--concurrency",
        &o.connections.to_string(),
    ]);
    cmd.env("TOKENVAULT_DATA_DIR", &data.0)
        .env("TOKENVAULT_LOG", "warn")
        .stderr(Stdio::inherit());
    if db == "postgres" || db == "citus" {
        cmd.env("DATABASE_URL", fresh_postgres(db, "ceilings").await?);
    } else {
        cmd.env_remove("DATABASE_URL");
    }
    let out = cmd.output().context("tokenvault-bench ceilings")?;
    if !out.status.success() {
        bail!("tokenvault-bench ceilings failed");
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// `tokenvault-bench fill`: adds `count` tokens to the bench tenant on the server's database.
pub(super) fn fill(server: &Server, count: u64) -> anyhow::Result<()> {
    let tenant = text(
        &curl(server, "GET", "/tenants/self", Some(BOOTSTRAP_KEY), None)?,
        "id",
    )?;
    let mut cmd = measuring(&["fill", "--tenant", &tenant, "--count", &count.to_string()]);
    cmd.env("TOKENVAULT_DATA_DIR", &server.data.0)
        .env("TOKENVAULT_LOG", "warn")
        .stdout(Stdio::null());
    match &server.database_url {
        Some(url) => cmd.env("DATABASE_URL", url),
        None => cmd.env_remove("DATABASE_URL"),
    };
    if !cmd.status().context("tokenvault-bench fill")?.success() {
        bail!("tokenvault-bench fill failed");
    }
    Ok(())
}

/// One request with curl; the JSON answer (2xx only).
pub(super) fn curl(
    server: &Server,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<&Value>,
) -> anyhow::Result<Value> {
    let mut cmd = Command::new("curl");
    cmd.args([
        "-s",
        "-w",
        "\n%{http_code}",
        "-X",
        method,
        &format!("{}{path}", server.base),
    ]);
    if let Some(key) = key {
        cmd.args(["-H", &format!("SVC-API-KEY: {key}")]);
    }
    if let Some(body) = body {
        cmd.args([
            "-H",
            "Content-Type: application/json",
            "-d",
            &body.to_string(),
        ]);
    }
    let out = cmd.output().context("curl")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", ""));
    if !out.status.success() || !status.starts_with('2') {
        bail!("{method} {path}: {status} {body}");
    }
    Ok(serde_json::from_str(body).unwrap_or(Value::Null))
}

pub(super) fn text(v: &Value, field: &str) -> anyhow::Result<String> {
    v[field]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("no {field} in {v}"))
}

/// Waits until the server has written every audit entry the last load left in memory
/// (`tokenvault_audit_events_waiting` at 0, at most 60 s), so that the next path's load does not
/// pay for this one's deferred writes. Returns how long that took, in ms: it is reported beside
/// the path whose entries they were. An older build without the gauge is not waited for; a
/// backlog still there after a minute is reported and the bench goes on.
pub(super) fn audit_drained(server: &Server) -> anyhow::Result<f64> {
    let started = Instant::now();
    loop {
        let out = Command::new("curl")
            .args([
                "-sf",
                "--max-time",
                "5",
                &format!("{}/metrics", server.base),
            ])
            .output()
            .context("curl /metrics")?;
        if !out.status.success() {
            bail!("GET /metrics failed: {}", out.status);
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let waiting = text
            .lines()
            .find_map(|l| l.strip_prefix("tokenvault_audit_events_waiting "))
            .and_then(|v| v.trim().parse::<u64>().ok());
        let elapsed = started.elapsed();
        match waiting {
            Some(0) | None => return Ok(elapsed.as_secs_f64() * 1000.0),
            Some(n) if elapsed > Duration::from_mins(1) => {
                eprintln!("bench: {n} audit entries still waiting after a minute; going on");
                return Ok(elapsed.as_secs_f64() * 1000.0);
            }
            Some(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

pub(super) fn peak_rss_mib(server: &Server) -> f64 {
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}
