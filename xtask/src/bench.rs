//! `cargo xtask bench [--db sqlite|postgres|both|citus] [--duration S] [--connections N] [--scale [N]]`: HTTP load
//! on the release binary, each path beside the `GET /health` ceiling measured in the same run.
//!
//! The server runs on a fresh database (a temporary SQLite file, or a new PostgreSQL database
//! next to `TOKENVAULT_TEST_DATABASE_URL`), is seeded over HTTP (an application with a reveal
//! rule, a token, a parent with 20 children, a trivial reactor, a proxy whose destination is a
//! local server of the bench's own, `destination.rs`), and is driven by `wrk` from a separate
//! process (installed with apt when missing). Prints one table and writes it as JSON under
//! `target/bench/`.
//!
//! Here the options and the run; `server.rs` starts the server and runs the measuring commands,
//! `seed.rs` seeds it, `scale.rs` is `--scale`.

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::bench_db::drop_postgres;
use crate::destination;
use crate::workspace::{cargo, root};
use crate::wrk::{Measured, Target, ensure_wrk, run_wrk_at};

mod scale;
mod seed;
mod server;

use scale::scale;
use seed::seed;
use server::{Server, audit_drained, ceilings, peak_rss_mib, start};

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

fn run_wrk(server: &Server, target: &Target, o: &Options) -> anyhow::Result<Measured> {
    run_wrk_at(&server.base, target, o.connections, o.duration)
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
