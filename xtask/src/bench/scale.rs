//! `--scale N`: the same paths with about 1,000 tokens in the tenant and with N more.

use std::time::Instant;

use anyhow::Context as _;
use serde_json::{Value, json};

use super::seed::seed;
use super::server::{fill, start};
use super::{CHILDREN, DETOKENIZE, LIST, Options, SEARCH, run_wrk};
use crate::destination;
use crate::wrk::{Measured, Target};

/// `--scale N`: on a fresh server, the list page, a children page and a detokenize with about
/// 1,000 tokens in the tenant and again with N more, and the ratio of each.
pub(super) async fn scale(db: &str, o: &Options, n: u64) -> anyhow::Result<Value> {
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
