//! `wrk`, the load generator of `cargo xtask bench`: installed when missing, driven with a Lua
//! script per target, its report parsed into rate, p50, p99 and errors.

use std::io::Write as _;
use std::process::Command;

use anyhow::Context as _;
use serde_json::Value;

/// One path to drive: method, path, key, extra headers and JSON body.
pub(crate) struct Target {
    pub(crate) name: &'static str,
    /// Another server than the vault (`http://host:port`); `None` for the vault.
    pub(crate) base: Option<String>,
    pub(crate) method: &'static str,
    pub(crate) path: String,
    pub(crate) key: Option<String>,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Option<Value>,
}

pub(crate) fn ensure_wrk() -> anyhow::Result<()> {
    if Command::new("wrk").arg("--version").output().is_ok() {
        return Ok(());
    }
    crate::apt::install(&["wrk"])
}

/// What `wrk` reported for one target.
#[derive(Default)]
pub(crate) struct Measured {
    pub(crate) rps: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) errors: u64,
}

fn lua(target: &Target) -> String {
    let mut lines = vec![format!("wrk.method = \"{}\"", target.method)];
    if let Some(key) = &target.key {
        lines.push(format!("wrk.headers[\"SVC-API-KEY\"] = \"{key}\""));
    }
    for (name, value) in &target.headers {
        lines.push(format!("wrk.headers[\"{name}\"] = \"{value}\""));
    }
    if let Some(body) = &target.body {
        lines.push("wrk.headers[\"Content-Type\"] = \"application/json\"".into());
        lines.push(format!("wrk.body = [==[{body}]==]"));
    }
    lines.join("\n") + "\n"
}

fn millis(value: &str) -> f64 {
    let (number, factor) = if let Some(v) = value.strip_suffix("us") {
        (v, 0.001)
    } else if let Some(v) = value.strip_suffix("ms") {
        (v, 1.0)
    } else if let Some(v) = value.strip_suffix('s') {
        (v, 1000.0)
    } else {
        (value, 1.0)
    };
    number.parse::<f64>().unwrap_or(f64::NAN) * factor
}

/// `wrk` on one target with `connections` connections (one thread per connection, at most two).
pub(crate) fn run_wrk_at(
    base: &str,
    target: &Target,
    connections: u64,
    duration: u64,
) -> anyhow::Result<Measured> {
    let script = std::env::temp_dir().join(format!("tokenvault-bench-{}.lua", std::process::id()));
    std::fs::File::create(&script)?.write_all(lua(target).as_bytes())?;
    let out = Command::new("wrk")
        .args([
            &format!("-t{}", connections.clamp(1, 2)),
            &format!("-c{connections}"),
            &format!("-d{duration}s"),
            "--latency",
            "-s",
        ])
        .arg(&script)
        .arg(format!(
            "{}{}",
            target.base.as_deref().unwrap_or(base),
            target.path
        ))
        .output()
        .context("run wrk")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut m = Measured::default();
    for line in text.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["Requests/sec:", v] => m.rps = v.parse().unwrap_or(0.0),
            ["50%", v] => m.p50_ms = millis(v),
            ["99%", v] => m.p99_ms = millis(v),
            ["Non-2xx", "or", "3xx", "responses:", n] => m.errors += n.parse().unwrap_or(0),
            ["Socket", "errors:", rest @ ..] => {
                m.errors += rest
                    .iter()
                    .filter_map(|w| w.trim_end_matches(',').parse::<u64>().ok())
                    .sum::<u64>();
            }
            _ => {}
        }
    }
    Ok(m)
}
