//! Encryption at rest: no token value or key stored in clear, and master key rotation (a
//! configured key, a development key file, and an interrupted rotation).

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_persistence::testing::backends;
use tokenvault_tests::{TestApp, full_private, on_each_backend};

use super::{Client, full};

#[tokio::test]
async fn no_token_value_or_key_is_stored_in_clear() {
    on_each_backend(async |app| {
        let c = full(app).await;
        let secrets = ["4111111111111111", "987-65-4329", "Sup3rS3cretValue-xyz"];
        // (Masks are sealed; search index expressions, like fingerprint expressions, are not.)
        let mask = "{{ data | reveal_last: 3 }}";
        c.create(&json!({"type": "card_number", "data": secrets[0], "mask": mask}))
            .await;
        c.create(&json!({"type": "social_security_number", "data": secrets[1]}))
            .await;
        c.create(&json!({"type": "token", "data": {"nested": secrets[2]}}))
            .await;
        let dump = app.dump_database().await;
        assert!(
            dump.len() > 1000,
            "the dump has content ({} bytes)",
            dump.len()
        );
        let text = String::from_utf8_lossy(&dump);
        assert!(
            text.contains("/pci/high/"),
            "the dump is readable where it should be"
        );
        for secret in secrets
            .iter()
            .copied()
            .chain([app.key.as_str(), c.key.as_str(), mask])
        {
            assert!(
                !text.contains(secret),
                "{secret} found in the {:?} database",
                app.backend
            );
        }
    })
    .await;
}

#[tokio::test]
async fn master_key_rotation_while_serving() {
    for backend in backends() {
        let old = tokenvault_crypto::MasterKey::generate_base64().to_string();
        let new = tokenvault_crypto::MasterKey::generate_base64().to_string();
        let mut app =
            TestApp::spawn_with(backend, |c| c.keys.master = Some(old.clone().into())).await;
        let c = Client {
            app: &app,
            key: full_private(&app).await,
        };
        let id = c
            .create(&json!({"type": "token", "data": "rotate-me"}))
            .await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let key = c.key.clone();

        let printed = tokenvault_server::rotate_master_key(&app.config, &new)
            .await
            .unwrap();
        assert_eq!(printed["rewrapped_tenant_keys"], 1);
        let again = tokenvault_server::rotate_master_key(&app.config, &new)
            .await
            .unwrap();
        assert_eq!(
            again["rewrapped_tenant_keys"], 0,
            "already under the new key"
        );
        // The running server keeps serving.
        let read = app
            .request_as(Some(&key), Method::GET, &format!("/tokens/{id}"))
            .send()
            .await
            .unwrap();
        assert_eq!(read.json::<Value>().await.unwrap()["data"], "rotate-me");

        // A fresh server with only the old key refuses to start; with the new one it serves.
        app.shutdown().await.unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let refused = tokenvault_server::run(app.config.clone(), listener, async {}).await;
        assert!(
            refused.is_err(),
            "only the old master key: refused at start"
        );
        app.restart_with(|c| c.keys.master = Some(new.clone().into()))
            .await;
        let read = app
            .request_as(Some(&key), Method::GET, &format!("/tokens/{id}"))
            .send()
            .await
            .unwrap();
        assert_eq!(read.json::<Value>().await.unwrap()["data"], "rotate-me");
        app.stop().await;
    }
}

/// Development mode (no master key configured: the server generated `<data dir>/master.key`):
/// `keys rotate-master` writes the new key into that file once the tenant keys are re-wrapped,
/// keeps the old one beside it as a previous key, and the CLI and the next start work on.
#[tokio::test]
async fn rotating_a_development_master_key_rewrites_the_data_dir_key_file() {
    for backend in backends() {
        let mut app = TestApp::spawn(backend).await;
        assert!(app.config.keys.master.is_none() && app.config.keys.master_file.is_none());
        let key = full_private(&app).await;
        let made: Value = app
            .request_as(Some(&key), Method::POST, "/tokens")
            .json(&json!({"type": "token", "data": "dev-rotate"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = made["id"].as_str().unwrap().to_string();
        let key_file = app.config.data_dir.join("master.key");
        let old = std::fs::read_to_string(&key_file).unwrap();
        let new = tokenvault_crypto::MasterKey::generate_base64().to_string();

        let printed = tokenvault_server::rotate_master_key(&app.config, &new)
            .await
            .unwrap();
        assert_eq!(printed["rewrapped_tenant_keys"], 1, "{printed}");
        assert_eq!(std::fs::read_to_string(&key_file).unwrap().trim(), new);
        let previous = app.config.data_dir.join("master.key.previous");
        assert_eq!(
            std::fs::read_to_string(&previous).unwrap().trim(),
            old.trim()
        );
        #[cfg(unix)]
        for file in [&key_file, &previous] {
            use std::os::unix::fs::PermissionsExt as _;
            let bits = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
            assert_eq!(bits, 0o600, "{}", file.display());
        }

        // The CLI works on the data dir as rotation left it.
        let (report, ok) = tokenvault_server::verify_audit(&app.config, None)
            .await
            .unwrap();
        assert!(ok, "{report}");
        app.new_tenant("after-rotation").await;
        let again = tokenvault_server::rotate_master_key(&app.config, &new)
            .await
            .unwrap();
        assert_eq!(again["rewrapped_tenant_keys"], 0, "{again}");

        // The next start serves, with the token readable.
        app.restart().await;
        let read: Value = app
            .request_as(Some(&key), Method::GET, &format!("/tokens/{id}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(read["data"], "dev-rotate");
        app.stop().await;
    }
}

/// A development-mode rotation cut short after the re-wrap, before `master.key` was replaced
/// (`master.key.new` holds the new key, `master.key` still the old one): the next start and the
/// CLI unwrap the re-wrapped tenant keys, a rotation to yet another key is refused, and running
/// the rotation again with the staged key finishes it. A staged file cut short before its fsync
/// (empty) wrapped nothing: it is ignored, and the next rotation replaces it.
#[tokio::test]
async fn an_interrupted_development_rotation_still_serves_and_finishes() {
    for backend in backends() {
        let mut app = TestApp::spawn(backend).await;
        let c = Client {
            app: &app,
            key: full_private(&app).await,
        };
        let id = c
            .create(&json!({"type": "token", "data": "cut-short"}))
            .await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let key = c.key.clone();
        let dir = app.config.data_dir.clone();
        let (key_file, staged, previous) = (
            dir.join("master.key"),
            dir.join("master.key.new"),
            dir.join("master.key.previous"),
        );
        let read_key =
            |path: &std::path::Path| std::fs::read_to_string(path).unwrap().trim().to_string();
        let old = read_key(&key_file);
        let new = tokenvault_crypto::MasterKey::generate_base64().to_string();
        tokenvault_server::rotate_master_key(&app.config, &new)
            .await
            .unwrap();
        // The files as a crash between the re-wrap and the rename leaves them.
        std::fs::rename(&key_file, &staged).unwrap();
        std::fs::remove_file(&previous).unwrap();
        std::fs::write(&key_file, format!("{old}\n")).unwrap();

        app.restart().await;
        let read = app
            .request_as(Some(&key), Method::GET, &format!("/tokens/{id}"))
            .send()
            .await
            .unwrap();
        assert_eq!(read.json::<Value>().await.unwrap()["data"], "cut-short");
        let (report, ok) = tokenvault_server::verify_audit(&app.config, None)
            .await
            .unwrap();
        assert!(ok, "{report}");

        let other = tokenvault_crypto::MasterKey::generate_base64().to_string();
        let refused = tokenvault_server::rotate_master_key(&app.config, &other)
            .await
            .expect_err("another key while one is staged")
            .to_string();
        assert!(refused.contains("master.key.new"), "{refused}");
        assert!(
            !refused.contains(&new) && !refused.contains(&old),
            "{refused}"
        );
        assert_eq!(read_key(&staged), new);
        assert_eq!(read_key(&key_file), old);

        let finished = tokenvault_server::rotate_master_key(&app.config, &read_key(&staged))
            .await
            .unwrap();
        assert_eq!(finished["rewrapped_tenant_keys"], 0, "{finished}");
        assert_eq!(read_key(&key_file), new);
        assert_eq!(read_key(&previous), old);
        assert!(!staged.exists());

        // A staged file cut short before its fsync: ignored at start, replaced by a rotation,
        // which keeps only the key it replaces as previous.
        std::fs::write(&staged, "").unwrap();
        app.restart().await;
        let read = app
            .request_as(Some(&key), Method::GET, &format!("/tokens/{id}"))
            .send()
            .await
            .unwrap();
        assert_eq!(read.json::<Value>().await.unwrap()["data"], "cut-short");
        let again = tokenvault_server::rotate_master_key(&app.config, &other)
            .await
            .unwrap();
        assert_eq!(again["rewrapped_tenant_keys"], 1, "{again}");
        assert_eq!(read_key(&key_file), other);
        assert_eq!(read_key(&previous), new);
        app.restart().await;
        let read = app
            .request_as(Some(&key), Method::GET, &format!("/tokens/{id}"))
            .send()
            .await
            .unwrap();
        assert_eq!(read.json::<Value>().await.unwrap()["data"], "cut-short");
        app.stop().await;
    }
}
