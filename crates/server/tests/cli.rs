//! The operator's commands, run as the binary: `config check` (an unknown key or a bad value
//! is an error naming it; secrets are never printed) and `migrate` (a fresh SQLite data dir
//! gets its schema, and a second run has nothing left to do).

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
        "postgres://vault@db.internal:5432/vault"
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
    let _ = std::fs::remove_dir_all(dir);
}
