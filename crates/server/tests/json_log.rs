//! Tenant code's `console` lines in the server's JSON log: the server's own `level` (debug),
//! never one the code chose (attack review of 3948bc8: the line carried a second `level` key,
//! set by the code).

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

const KEY: &str = "key_ConsoleLinesTestKey0123456789abc";

async fn post(client: &reqwest::Client, base: &str, path: &str, key: &str, body: Value) -> Value {
    let res = client
        .post(format!("{base}{path}"))
        .header("SVC-API-KEY", key)
        .json(&body)
        .send()
        .await
        .expect("the server answers");
    let status = res.status();
    let body: Value = res.json().await.expect("a JSON answer");
    assert!(status.is_success(), "{path}: {status} {body}");
    body
}

#[tokio::test]
async fn tenant_console_lines_carry_the_servers_level_only() {
    let dir = std::env::temp_dir().join(format!("tokenvault-jsonlog-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let mut server = Command::new(env!("CARGO_BIN_EXE_tokenvault"))
        .current_dir(&dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("TOKENVAULT_LOG_FORMAT", "json")
        .env("TOKENVAULT_LOG", "info,tokenvault_code=debug")
        .env("TOKENVAULT_LISTEN", format!("127.0.0.1:{port}"))
        .env("TOKENVAULT_DATA_DIR", dir.join("data"))
        .env("TOKENVAULT_BOOTSTRAP_KEY", KEY)
        .env("TOKENVAULT_CODE_WORKERS", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the server starts");
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    for _ in 0..200 {
        if client.get(format!("{base}/health")).send().await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let code = "module.exports = async function (req) { console.warn('careful-line'); \
                console.error('failing-line'); return { raw: { ok: true } }; };";
    let formula = post(
        &client,
        &base,
        "/reactor-formulas",
        KEY,
        json!({"name": "f", "type": "private", "code": code,
               "configuration": [], "request_parameters": []}),
    )
    .await;
    let reactor = post(
        &client,
        &base,
        "/reactors",
        KEY,
        json!({"name": "r", "configuration": {}, "formula": {"id": formula["id"]}}),
    )
    .await;
    let app = post(
        &client,
        &base,
        "/applications",
        KEY,
        json!({"name": "user", "type": "private", "permissions": ["token:use"]}),
    )
    .await;
    let reacted = post(
        &client,
        &base,
        &format!(
            "/reactors/{}/react",
            reactor["id"].as_str().unwrap_or_default()
        ),
        app["key"].as_str().unwrap_or_default(),
        json!({"args": {}}),
    )
    .await;
    assert_eq!(reacted["raw"]["ok"], true, "{reacted}");
    let _ = server.kill();
    let output = server.wait_with_output().expect("the server's log");
    let log = String::from_utf8_lossy(&output.stderr).into_owned();
    let _ = std::fs::remove_dir_all(&dir);
    for (text, method) in [("careful-line", "warn"), ("failing-line", "error")] {
        let line = log
            .lines()
            .find(|l| l.contains(text))
            .unwrap_or_else(|| panic!("no line of {text} in {log}"));
        assert_eq!(line.matches("\"level\"").count(), 1, "{line}");
        let parsed: Value = serde_json::from_str(line).expect("a JSON line");
        assert_eq!(parsed["level"], "DEBUG", "{line}");
        assert_eq!(parsed["console"], method, "{line}");
    }
}
