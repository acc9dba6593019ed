//! The master key in OpenBao Transit (a real dev server the test starts): tenant keys are
//! wrapped there and no master key is made locally; a Transit rotation followed by
//! `keys rotate-master` re-wraps every tenant key under the new version, after which the old
//! version can be retired; a vault with a local master key moves to Transit; a refused token or
//! a missing key stops the server at start, naming the cause.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_server::config::Transit;
use tokenvault_server::{open_vault, rotate_in_transit};
use tokenvault_tests::openbao::{KEY, OpenBao};
use tokenvault_tests::{TestApp, full_private};

/// Whether the dump holds `needle`, as bytes (SQLite) or as PostgreSQL's hex text of a `bytea`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    let hex: String = needle.iter().fold(String::new(), |mut out, b| {
        use std::fmt::Write as _;
        let _ = write!(out, "{b:02x}");
        out
    });
    [needle, hex.as_bytes()]
        .iter()
        .any(|n| haystack.windows(n.len()).any(|w| w == *n))
}

async fn make_token(app: &TestApp, key: &str, data: &str) -> String {
    let res = app
        .request_as(Some(key), Method::POST, "/tokens")
        .json(&json!({"type": "token", "data": data}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    res.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn read_token(app: &TestApp, key: &str, id: &str) -> Value {
    let res = app
        .request_as(Some(key), Method::GET, &format!("/tokens/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "token {id}");
    res.json::<Value>().await.unwrap()["data"].clone()
}

#[tokio::test]
async fn tenant_keys_are_wrapped_by_transit_and_follow_its_rotation() {
    for backend in tokenvault_persistence::testing::backends() {
        let bao = OpenBao::start().await;
        let token_file = bao.token_file(&bao.token);
        let app = TestApp::spawn_with(backend, |c| {
            c.keys.transit = Some(Transit::new(bao.address.clone(), token_file.clone()));
        })
        .await;
        assert!(
            !app.config.data_dir.join("master.key").exists(),
            "no local master key is made"
        );
        let key = full_private(&app).await;
        let id = make_token(&app, &key, "in transit").await;
        assert_eq!(read_token(&app, &key, &id).await, "in transit");
        let dump = app.dump_database().await;
        assert!(
            contains(&dump, b"vault:v1:"),
            "tenant keys are Transit ciphertexts"
        );

        bao.rotate().await;
        let rotated = rotate_in_transit(&app.config).await.unwrap();
        assert!(
            rotated["rewrapped_tenant_keys"].as_u64().unwrap() >= 1,
            "{rotated}"
        );
        let again = rotate_in_transit(&app.config).await.unwrap();
        assert_eq!(again["rewrapped_tenant_keys"], 0, "already current");
        let dump = app.dump_database().await;
        assert!(contains(&dump, b"vault:v2:"), "re-wrapped under version 2");
        bao.retire_versions_below(2).await;
        // A fresh server unwraps every tenant key under version 2 only.
        let fresh = open_vault(&app.config).await.unwrap();
        assert!(
            fresh
                .tenants
                .tenants_without_master_key()
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(read_token(&app, &key, &id).await, "in transit");
        app.stop().await;
        let _ = std::fs::remove_file(token_file);
    }
}

#[tokio::test]
async fn a_vault_with_a_local_master_key_moves_to_transit() {
    let bao = OpenBao::start().await;
    let token_file = bao.token_file(&bao.token);
    for backend in tokenvault_persistence::testing::backends() {
        let local = "bG9jYWwtbWFzdGVyLWtleS10by1tb3ZlLTMyYnl0ZXM=";
        let mut app = TestApp::spawn_with(backend, |c| {
            c.keys.master = Some(local.to_string().into());
        })
        .await;
        let key = full_private(&app).await;
        let id = make_token(&app, &key, "moving").await;
        // Transit current, the local key still unwrapping the old tenant keys.
        let (address, file) = (bao.address.clone(), token_file.clone());
        app.restart_with(|c| {
            c.keys.transit = Some(Transit::new(address, file));
        })
        .await;
        assert_eq!(read_token(&app, &key, &id).await, "moving");
        let moved = rotate_in_transit(&app.config).await.unwrap();
        assert!(
            moved["rewrapped_tenant_keys"].as_u64().unwrap() >= 1,
            "{moved}"
        );
        // Without the local key now.
        app.restart_with(|c| c.keys.master = None).await;
        assert_eq!(read_token(&app, &key, &id).await, "moving");
        app.stop().await;
    }
    let _ = std::fs::remove_file(token_file);
}

#[tokio::test]
async fn a_refused_token_or_a_missing_key_stops_the_start() {
    let bao = OpenBao::start().await;
    let wrong = bao.token_file("not-the-token");
    let mut config = tokenvault_server::Config::for_tests(
        "sqlite://unused.db?mode=rwc".into(),
        std::env::temp_dir().join("tokenvault-transit-refused"),
    );
    config.keys.transit = Some(Transit::new(bao.address.clone(), wrong.clone()));
    let err = format!("{:#}", open_vault(&config).await.err().unwrap());
    assert!(err.contains("Transit") && err.contains("403"), "{err}");
    assert!(
        !err.contains("not-the-token"),
        "the token is never shown: {err}"
    );

    let right = bao.token_file(&bao.token);
    config.keys.transit = Some(Transit {
        key: format!("{KEY}-missing"),
        ..Transit::new(bao.address.clone(), right.clone())
    });
    let err = format!("{:#}", open_vault(&config).await.err().unwrap());
    assert!(err.contains("bao write -f"), "{err}");

    // An address without its token file is refused when the configuration is read.
    let file = right.with_extension("toml");
    std::fs::write(&file, format!("transit_address = {:?}\n", bao.address)).unwrap();
    let err = tokenvault_server::Config::load(Some(&file))
        .unwrap_err()
        .to_string();
    assert!(err.contains("TOKENVAULT_TRANSIT_TOKEN_FILE"), "{err}");
    let _ = std::fs::remove_file(file);
    let _ = std::fs::remove_file(wrong);
    let _ = std::fs::remove_file(right);
}
