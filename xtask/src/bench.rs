//! `cargo xtask bench [--db sqlite|postgres|both|citus] [--duration S] [--connections N] [--scale [N]]`: HTTP load
//! on the release binary, each path beside the `GET /health` ceiling measured in the same run.
//!
//! The server runs on a fresh database (a temporary SQLite file, or a new PostgreSQL database
//! next to `TOKENVAULT_TEST_DATABASE_URL`), is seeded over HTTP (an application with a reveal
//! rule, a token, a parent with 20 children, a trivial reactor, a proxy whose destination is a
//! local server of the bench's own, `destination.rs`), and is driven by `wrk` from a separate
//! process (installed with apt when missing). Prints one table and writes it as JSON under
//! `target/bench/`.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::bench_db::{drop_postgres, fresh_postgres};
use crate::destination;
use crate::workspace::{cargo, root};
use crate::wrk::{Measured, Target, ensure_wrk, run_wrk_at};

const BOOTSTRAP_KEY: &str = "key_benchbenchbenchbenchbenchbench12";

const HEALTH: &str = "GET /health (ceiling)";
const TOKENIZE: &str = "POST /tokens (tokenize)";
const DETOKENIZE: &str = "GET /tokens/{id} reveal (detokenize)";
const PROXY: &str = "POST /proxy → destination (round trip)";
const DESTINATION: &str = "POST destination, direct (proxy's baseline)";
const CHILDREN: &str = "GET /tokens/{id}/children (20)";
const LIST: &str = "GET /tokens?size=20 (list page)";
const SEARCH: &str = "POST /tokens/search data:<value> (index)";

struct Options {
    dbs: Vec<&'static str>,
    duration: u64,
    connections: u64,
    /// `--scale N`: also measure the list, a children page, a detokenize and a search with N
    /// tokens.
    scale: Option<u64>,
}

fn options(args: &[&str]) -> anyhow::Result<Options> {
    let mut o = Options {
        dbs: vec!["sqlite"],
        duration: 8,
        connections: 16,
        scale: None,
    };
    let mut it = args.iter().peekable();
    while let Some(arg) = it.next() {
        let mut value = || it.next().copied().context("a value must follow the option");
        match *arg {
            "--db" => {
                o.dbs = match value()? {
                    "sqlite" => vec!["sqlite"],
                    "postgres" => vec!["postgres"],
                    "both" => vec!["sqlite", "postgres"],
                    "citus" => vec!["citus"],
                    other => bail!("--db {other}: sqlite, postgres, both or citus"),
                }
            }
            "--duration" => o.duration = value()?.parse().context("--duration: seconds")?,
            "--connections" => o.connections = value()?.parse().context("--connections")?,
            "--scale" => {
                let n = it.peek().and_then(|v| v.parse::<u64>().ok());
                if n.is_some() {
                    it.next();
                }
                o.scale = Some(n.unwrap_or(1_000_000));
            }
            other => bail!("unknown option {other}"),
        }
    }
    Ok(o)
}

struct Server {
    child: Child,
    base: String,
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

async fn start(db: &str) -> anyhow::Result<Server> {
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
async fn ceilings(db: &str, o: &Options) -> anyhow::Result<Value> {
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
fn fill(server: &Server, count: u64) -> anyhow::Result<()> {
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

/// `--scale N`: on a fresh server, the list page, a children page and a detokenize with about
/// 1,000 tokens in the tenant and again with N more, and the ratio of each.
async fn scale(db: &str, o: &Options, n: u64) -> anyhow::Result<Value> {
    let server = start(db).await?;
    let destination = destination::start()?;
    let mut targets = seed(&server, &destination.base)?;
    targets.retain(|t| [DETOKENIZE, CHILDREN, SEARCH].contains(&t.name));
    let key = targets
        .first()
        .and_then(|t| t.key.clone())
        .context("no key")?;
    targets.insert(
        0,
        Target {
            name: LIST,
            base: None,
            method: "GET",
            path: "/tokens?size=20".into(),
            key: Some(key.clone()),
            headers: vec![],
            body: None,
        },
    );
    fill(&server, 1_000)?;
    let small: Vec<Measured> = targets
        .iter()
        .map(|t| run_wrk(&server, t, o))
        .collect::<anyhow::Result<_>>()?;
    let started = Instant::now();
    fill(&server, n)?;
    eprintln!(
        "xtask: added {n} tokens in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let large: Vec<Measured> = targets
        .iter()
        .map(|t| run_wrk(&server, t, o))
        .collect::<anyhow::Result<_>>()?;
    println!("\n{db} at scale: ~1,000 tokens, then {n} more in the same tenant");
    println!(
        "{:<40} {:>12} {:>12} {:>8} {:>12}",
        "path", "req/s 1k", "req/s large", "ratio", "p99 ms large"
    );
    let mut rows = Vec::new();
    for ((t, a), b) in targets.iter().zip(&small).zip(&large) {
        let ratio = b.rps / a.rps;
        println!(
            "{:<40} {:>12.0} {:>12.0} {:>8.2} {:>12.2}",
            t.name, a.rps, b.rps, ratio, b.p99_ms
        );
        rows.push(
            json!({"path": t.name, "rps_1k": a.rps, "rps_large": b.rps, "ratio": ratio,
                         "p99_ms_large": b.p99_ms, "errors_large": b.errors}),
        );
    }
    Ok(json!({"db": db, "tokens": n, "rows": rows}))
}

/// One request with curl; the JSON answer (2xx only).
fn curl(
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

fn text(v: &Value, field: &str) -> anyhow::Result<String> {
    v[field]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("no {field} in {v}"))
}

/// What the load runs use: (name, method, path, key, body).
fn seed(server: &Server, destination: &str) -> anyhow::Result<Vec<Target>> {
    let m = Some(BOOTSTRAP_KEY);
    let all = [
        "token:create",
        "token:read",
        "token:use",
        "token:update",
        "token:search",
    ];
    let app = curl(
        server,
        "POST",
        "/applications",
        m,
        Some(&json!({
        "name": "bench", "type": "private", "permissions": all,
        "rules": [{"priority": 1, "container": "/", "transform": "reveal", "permissions": all}]})),
    )?;
    let key = text(&app, "key")?;
    let app_id = text(&app, "id")?;
    let k = Some(key.as_str());
    let token = curl(
        server,
        "POST",
        "/tokens",
        k,
        Some(&json!({"type": "token", "data": "bench value"})),
    )?;
    let token_id = text(&token, "id")?;
    // A social security number: found by its default search indexes.
    curl(
        server,
        "POST",
        "/tokens",
        k,
        Some(&json!({"type": "social_security_number", "data": "123-45-6789"})),
    )?;
    let parent = text(
        &curl(
            server,
            "POST",
            "/tokens",
            k,
            Some(&json!({"type": "token", "data": "parent"})),
        )?,
        "id",
    )?;
    for i in 0..20 {
        let path = format!("/tokens/{parent}/children");
        curl(
            server,
            "POST",
            &path,
            k,
            Some(&json!({"type": "token", "data": format!("child {i}")})),
        )?;
    }
    let formula = curl(
        server,
        "POST",
        "/reactor-formulas",
        m,
        Some(&json!({
        "name": "bench", "type": "private",
        "code": "module.exports = async function (req) { return { raw: req.args }; };"})),
    )?;
    let reactor = curl(
        server,
        "POST",
        "/reactors",
        m,
        Some(&json!({
        "name": "bench", "configuration": {}, "formula": {"id": text(&formula, "id")?}})),
    )?;
    let proxy = curl(
        server,
        "POST",
        "/proxies",
        m,
        Some(&json!({
        "name": "bench", "destination_url": format!("{destination}/destination"),
        "application": {"id": app_id}, "require_auth": true})),
    )?;
    let json_body = json!({"card": format!("{{{{ {token_id} }}}}"), "note": "x".repeat(900)});
    Ok(vec![
        Target {
            name: HEALTH,
            base: None,
            method: "GET",
            path: "/health".into(),
            key: None,
            headers: vec![],
            body: None,
        },
        Target {
            name: TOKENIZE,
            base: None,
            method: "POST",
            path: "/tokens".into(),
            key: Some(key.clone()),
            headers: vec![],
            body: Some(json!({"type": "token", "data": "bench value"})),
        },
        Target {
            name: DETOKENIZE,
            base: None,
            method: "GET",
            path: format!("/tokens/{token_id}"),
            key: Some(key.clone()),
            headers: vec![],
            body: None,
        },
        Target {
            name: SEARCH,
            base: None,
            method: "POST",
            path: "/tokens/search".into(),
            key: Some(key.clone()),
            headers: vec![],
            body: Some(json!({"query": "data:123456789"})),
        },
        Target {
            name: CHILDREN,
            base: None,
            method: "GET",
            path: format!("/tokens/{parent}/children?size=20"),
            key: Some(key.clone()),
            headers: vec![],
            body: None,
        },
        Target {
            name: "POST /reactors/{id}/react (warm)",
            base: None,
            method: "POST",
            path: format!("/reactors/{}/react", text(&reactor, "id")?),
            key: Some(key.clone()),
            headers: vec![],
            body: Some(json!({"args": {"card": format!("{{{{ {token_id} }}}}")}})),
        },
        Target {
            name: PROXY,
            base: None,
            method: "POST",
            path: "/proxy".into(),
            key: Some(key.clone()),
            headers: vec![("SVC-PROXY-KEY", text(&proxy, "key")?)],
            body: Some(json_body.clone()),
        },
        Target {
            name: DESTINATION,
            base: Some(destination.to_owned()),
            method: "POST",
            path: "/destination".into(),
            key: None,
            headers: vec![],
            body: Some(json_body),
        },
    ])
}

fn run_wrk(server: &Server, target: &Target, o: &Options) -> anyhow::Result<Measured> {
    run_wrk_at(&server.base, target, o.connections, o.duration)
}

/// Waits until the server has written every audit entry the last load left in memory
/// (`tokenvault_audit_events_waiting` at 0, at most 60 s), so that the next path's load does not
/// pay for this one's deferred writes. Returns how long that took, in ms: it is reported beside
/// the path whose entries they were. An older build without the gauge is not waited for; a
/// backlog still there after a minute is reported and the bench goes on.
fn audit_drained(server: &Server) -> anyhow::Result<f64> {
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

fn peak_rss_mib(server: &Server) -> f64 {
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

pub(crate) async fn bench(args: &[&str]) -> anyhow::Result<()> {
    let o = options(args)?;
    ensure_wrk()?;
    if std::env::var_os("TOKENVAULT_BENCH_BIN").is_none() {
        cargo(
            &["build", "--release", "--locked", "-p", "tokenvault-server"],
            &[],
        )?;
    }
    let destination = destination::start()?;
    let mut report = Vec::new();
    for db in &o.dbs {
        let server = start(db).await?;
        let targets = seed(&server, &destination.base)?;
        let mut rows = Vec::new();
        let mut ceiling = 0.0;
        for target in &targets {
            let m = run_wrk(&server, target, &o)?;
            let drain = audit_drained(&server)?;
            if target.path == "/health" {
                ceiling = m.rps;
            }
            rows.push((target.name, m, drain));
        }
        println!(
            "\n{db}: wrk -t2 -c{} -d{}s, loopback, release",
            o.connections, o.duration
        );
        println!(
            "{:<40} {:>10} {:>9} {:>9} {:>7} {:>9} {:>9}",
            "path", "req/s", "p50 ms", "p99 ms", "errors", "of /health", "audit ms"
        );
        let mut json_rows = Vec::new();
        for (name, m, drain) in &rows {
            let ratio = if ceiling > 0.0 {
                m.rps / ceiling
            } else {
                f64::NAN
            };
            println!(
                "{name:<40} {:>10.0} {:>9.2} {:>9.2} {:>7} {:>8.1}% {:>9.0}",
                m.rps,
                m.p50_ms,
                m.p99_ms,
                m.errors,
                ratio * 100.0,
                drain
            );
            json_rows.push(
                json!({"path": name, "rps": m.rps, "p50_ms": m.p50_ms, "p99_ms": m.p99_ms,
                       "errors": m.errors, "ratio_to_health": ratio, "audit_drain_ms": drain}),
            );
        }
        let rss = peak_rss_mib(&server);
        println!("server peak RSS: {rss:.0} MiB");
        // What a proxy adds to one call, without the queueing 16 connections add to both.
        let alone = |path: &str| -> anyhow::Result<Measured> {
            let target = targets
                .iter()
                .find(|t| t.name == path)
                .context("a seeded target")?;
            run_wrk_at(&server.base, target, 1, o.duration)
        };
        let (proxy_alone, direct_alone) = (alone(PROXY)?, alone(DESTINATION)?);
        let added_alone = proxy_alone.p50_ms - direct_alone.p50_ms;
        drop(server);
        let ceiling = ceilings(db, &o).await?;
        let rate = |field: &str| ceiling[field].as_f64().unwrap_or(f64::NAN);
        let rps = |name: &str| {
            rows.iter()
                .find(|(n, _, _)| *n == name)
                .map_or(f64::NAN, |(_, m, _)| m.rps)
        };
        let p50 = |name: &str| {
            rows.iter()
                .find(|(n, _, _)| *n == name)
                .map_or(f64::NAN, |(_, m, _)| m.p50_ms)
        };
        println!(
            "ceilings without HTTP (tokenvault-bench ceilings, {} tasks):",
            o.connections
        );
        for (label, field, path) in [
            (
                "token insert, persistence adapter",
                "insert_per_s",
                TOKENIZE,
            ),
            ("token read, persistence adapter", "read_per_s", DETOKENIZE),
        ] {
            println!(
                "  {label:<38} {:>10.0}/s  {path}: {:.1}% of it",
                rate(field),
                rps(path) / rate(field) * 100.0
            );
        }
        println!(
            "  {:<38} {:>10.0}/s  (one thread)",
            "AES-256-GCM encrypt+decrypt, 64 B",
            rate("encrypt_decrypt_per_s")
        );
        let added = p50(PROXY) - p50(DESTINATION);
        println!(
            "  proxy added latency at p50 (proxy − direct call of the destination): {added:.2} ms \
             at {} connections, {added_alone:.3} ms at 1 ({:.3} − {:.3})",
            o.connections, proxy_alone.p50_ms, direct_alone.p50_ms
        );
        let at_scale = match o.scale {
            Some(n) => scale(db, &o, n).await?,
            None => Value::Null,
        };
        if *db == "postgres" || *db == "citus" {
            drop_postgres(db, &["http", "ceilings"]).await?;
        }
        report.push(
            json!({"db": db, "connections": o.connections, "duration_s": o.duration,
                           "peak_rss_mib": rss, "rows": json_rows, "ceilings": ceiling,
                           "proxy_added_p50_ms": added,
                           "proxy_added_p50_ms_one_connection": added_alone,
                           "scale": at_scale}),
        );
    }
    let dir = root().join("target/bench");
    std::fs::create_dir_all(&dir)?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let path = dir.join(format!("bench-{stamp}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&report)?)?;
    eprintln!("xtask: wrote {}", path.display());
    Ok(())
}
