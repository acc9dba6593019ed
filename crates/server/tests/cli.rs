//! The operator's commands, run as the binary: `config check` (an unknown key or a bad value
//! is an error naming it; secrets are never printed), `migrate` (a fresh SQLite data dir
//! gets its schema, and a second run has nothing left to do), `backup`/`restore`, and
//! `healthcheck`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tokenvault(args: &[&str], dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tokenvault"));
    command.args(args).current_dir(dir).env_clear();
    command.env("PATH", std::env::var_os("PATH").unwrap_or_default());
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("the tokenvault binary runs")
}

fn scratch() -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("tokenvault-cli-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn config_check_names_a_wrong_key_and_hides_secrets() {
    let dir = scratch();
    std::fs::write(
        dir.join("tokenvault.toml"),
        "listen = \"127.0.0.1:9999\"\ncode_wrokers = 3\n",
    )
    .unwrap();
    let out = tokenvault(&["config", "check"], &dir, &[]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("unknown key `code_wrokers`"),
        "{}",
        text(&out.stderr)
    );

    std::fs::write(dir.join("tokenvault.toml"), "code_tenant_share = 0\n").unwrap();
    let out = tokenvault(&["config", "check"], &dir, &[]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("TOKENVAULT_CODE_TENANT_SHARE"),
        "{}",
        text(&out.stderr)
    );

    std::fs::write(dir.join("tokenvault.toml"), "code_workers = \"many\"\n").unwrap();
    let out = tokenvault(&["config", "check"], &dir, &[]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("code_workers"),
        "{}",
        text(&out.stderr)
    );

    std::fs::write(dir.join("tokenvault.toml"), "code_workers = 3\n").unwrap();
    let secret = "c2VjcmV0LW1hc3Rlci1rZXktb2YtMzItYnl0ZXMtISE=";
    let out = tokenvault(
        &["config", "check"],
        &dir,
        &[
            ("TOKENVAULT_MASTER_KEY", secret),
            (
                "DATABASE_URL",
                "postgres://vault:hunter2@db.internal:5432/vault",
            ),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["code_workers"], 3);
    assert_eq!(printed["master_key"], "TOKENVAULT_MASTER_KEY");
    assert_eq!(
        printed["database"],
        "postgres://vault:***@db.internal:5432/vault"
    );
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!all.contains(secret) && !all.contains("hunter2"), "{all}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn migrate_makes_the_schema_once() {
    let dir = scratch();
    let data = dir.join("data");
    let env = [("TOKENVAULT_DATA_DIR", data.to_str().unwrap())];
    let out = tokenvault(&["migrate"], &dir, &env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let first: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        first["applied"].as_array().is_some_and(|a| !a.is_empty()),
        "{first}"
    );
    assert!(data.join("tokenvault.db").exists());
    let out = tokenvault(&["migrate"], &dir, &env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let second: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(second["applied"], serde_json::json!([]));
    // `backup` copies it; `restore` never writes over a vault.
    let copy = dir.join("copy.db");
    let out = tokenvault(&["backup", copy.to_str().unwrap()], &dir, &env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(copy.is_file());
    let out = tokenvault(&["restore", copy.to_str().unwrap()], &dir, &env);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("already"),
        "{}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// One HTTP/1.1 request on a fresh connection; the status code.
fn get(port: u16, path: &str, key: Option<&str>) -> Option<u16> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    let auth = key
        .map(|k| format!("SVC-API-KEY: {k}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\n{auth}Connection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer.split(' ').nth(1)?.parse().ok()
}

/// `TOKENVAULT_LOG_FORMAT=json`: every line the server logs is one JSON object; a request's
/// line carries its trace id, route template, status and latency, and neither the key it was
/// made with nor the data it returned.
#[test]
fn json_logs_are_one_object_a_line_without_keys() {
    let dir = scratch();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let key = "key_JsonLogsTestKey0123456789abcdefg";
    let listen = format!("127.0.0.1:{port}");
    let data = dir.join("data");
    let mut server = Command::new(env!("CARGO_BIN_EXE_tokenvault"))
        .current_dir(&dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("TOKENVAULT_LOG_FORMAT", "json")
        .env("TOKENVAULT_LISTEN", &listen)
        .env("TOKENVAULT_DATA_DIR", &data)
        .env("TOKENVAULT_BOOTSTRAP_KEY", key)
        .env("TOKENVAULT_CODE_WORKERS", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the server starts");
    let mut up = false;
    for _ in 0..200 {
        if get(port, "/health", None) == Some(200) {
            up = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let answered = get(port, "/applications", Some(key));
    // `tokenvault healthcheck` (the image's HEALTHCHECK) asks the same server for /ready.
    let wildcard = format!("0.0.0.0:{port}");
    let healthy = tokenvault(&["healthcheck"], &dir, &[("TOKENVAULT_LISTEN", &wildcard)]);
    let _ = server.kill();
    let output = server.wait_with_output().expect("the server's log");
    let unhealthy = tokenvault(&["healthcheck"], &dir, &[("TOKENVAULT_LISTEN", &wildcard)]);
    assert!(healthy.status.success(), "{}", text(&healthy.stderr));
    assert!(
        text(&healthy.stdout).contains("\"ready\""),
        "{}",
        text(&healthy.stdout)
    );
    assert!(
        !unhealthy.status.success(),
        "a stopped server is not healthy"
    );
    assert!(
        text(&unhealthy.stderr).contains("not ready"),
        "{}",
        text(&unhealthy.stderr)
    );
    let log = text(&output.stderr);
    assert!(up, "{log}");
    assert_eq!(answered, Some(200), "{log}");
    let lines: Vec<serde_json::Value> = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let request = lines
        .iter()
        .find(|l| l["route"] == "/applications")
        .unwrap_or_else(|| panic!("no request line in {log}"));
    assert_eq!(request["status"], 200, "{request}");
    assert!(request["elapsed_ms"].is_number(), "{request}");
    assert!(
        request["span"]["trace_id"]
            .as_str()
            .is_some_and(|t| !t.is_empty()),
        "{request}"
    );
    assert!(!log.contains(key), "the key is in the log");
    let _ = std::fs::remove_dir_all(dir);
}

/// The commented sample `deploy/tokenvault.toml` is a valid configuration, and sets every key
/// the server has (so it cannot fall behind the configuration).
#[test]
fn the_sample_configuration_is_valid_and_complete() {
    let dir = scratch();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/tokenvault.toml");
    let out = tokenvault(
        &["--config", sample.to_str().unwrap(), "config", "check"],
        &dir,
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["listen"], "127.0.0.1:8080");
    let written = std::fs::read_to_string(&sample).unwrap();
    let mentioned = |key: &str| {
        written.lines().any(|l| {
            l.trim_start_matches(['#', ' '])
                .starts_with(&format!("{key} ="))
        })
    };
    for key in printed.as_object().unwrap().keys() {
        // `config check` prints the effective database and whether TLS is on; the file's
        // keys are database_url and tls_cert.
        let key = match key.as_str() {
            "database" => "database_url",
            "tls" => "tls_cert",
            k => k,
        };
        assert!(
            mentioned(key),
            "deploy/tokenvault.toml does not mention {key}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The binary allocates with jemalloc under the settings `main.rs` gives it (an exported
/// symbol jemalloc reads at its start; a renamed symbol would be ignored without a word).
#[test]
fn the_allocator_is_jemalloc_with_its_settings() {
    let dir = scratch();
    let out = tokenvault(
        &["--version"],
        &dir,
        &[("_RJEM_MALLOC_CONF", "stats_print:true")],
    );
    let printed = text(&out.stderr) + &text(&out.stdout);
    assert!(out.status.success(), "{printed}");
    for setting in ["opt.narenas: 2", "opt.dirty_decay_ms: 1000"] {
        assert!(
            printed.contains(setting),
            "no {setting:?} in jemalloc's stats"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
