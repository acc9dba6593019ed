//! `/tenants/self` and tenant provisioning.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::{TestApp, assert_invalid, assert_problem, on_each_backend, unique};

#[tokio::test]
async fn bootstrap_tenant_is_default_with_false_settings() {
    on_each_backend(async |app| {
        let tenant: Value = app.get("/tenants/self").await.json().await.unwrap();
        assert_eq!(tenant["name"], "Default");
        assert_eq!(
            tenant["settings"],
            json!({"fingerprint_tokens": "false", "deduplicate_tokens": "false"})
        );
        assert!(uuid::Uuid::parse_str(tenant["owner_id"].as_str().unwrap()).is_ok());
    })
    .await;
}

#[tokio::test]
async fn update_changes_only_given_settings() {
    on_each_backend(async |app| {
        let res = app
            .put(
                "/tenants/self",
                &json!({"name": "Renamed", "settings": {"deduplicate_tokens": "true"}}),
            )
            .await;
        assert_eq!(res.status(), 200);
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["settings"]["deduplicate_tokens"], "true");
        assert_eq!(body["settings"]["fingerprint_tokens"], "false");
        assert!(body["modified_at"].is_string());

        let res = app
            .put("/tenants/self", &json!({"name": "Renamed again"}))
            .await;
        assert_eq!(res.status(), 200);
        let res = app
            .put(
                "/tenants/self",
                &json!({"name": "R", "settings": {"fingerprint_tokens": "true"}}),
            )
            .await;
        assert_eq!(res.status(), 200);
        let tenant: Value = app.get("/tenants/self").await.json().await.unwrap();
        assert_eq!(tenant["name"], "R");
        assert_eq!(
            tenant["settings"],
            json!({"fingerprint_tokens": "true", "deduplicate_tokens": "true"})
        );
    })
    .await;
}

#[tokio::test]
async fn invalid_updates_name_the_field_and_change_nothing() {
    on_each_backend(async |app| {
        for (body, field) in [
            (json!({"settings": {}}), "name"),
            (json!({"name": "x".repeat(201)}), "name"),
            (json!({"name": ""}), "name"),
            (
                json!({"name": "a", "settings": {"fingerprint_tokens": "yes"}}),
                "settings.fingerprint_tokens",
            ),
            (
                json!({"name": "a", "settings": {"deduplicate_tokens": true}}),
                "settings.deduplicate_tokens",
            ),
            (json!({"name": "a", "settings": "true"}), "settings"),
        ] {
            assert_invalid(app.put("/tenants/self", &body).await, &[field]).await;
        }
        let tenant: Value = app.get("/tenants/self").await.json().await.unwrap();
        assert_eq!(tenant["name"], "Default");
        assert_eq!(tenant["settings"]["deduplicate_tokens"], "false");
        assert_eq!(
            app.put("/tenants/self", &json!({"name": "y".repeat(200)}))
                .await
                .status(),
            200
        );
    })
    .await;
}

#[tokio::test]
async fn provisioned_tenants_are_separate_with_owner() {
    on_each_backend(async |app| {
        let owner = uuid::Uuid::new_v4();
        let printed = tokenvault_server::tenant_commands::create(&app.config, "Acme", Some(owner))
            .await
            .unwrap();
        assert_eq!(printed["tenant"]["owner_id"], owner.to_string());
        assert_eq!(printed["tenant"]["name"], "Acme");
        let key = printed["management_key"].as_str().unwrap();
        let me: Value = app
            .request_as(Some(key), Method::GET, "/tenants/self")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(me["id"], printed["tenant"]["id"]);
        assert_ne!(
            me["id"],
            app.get("/tenants/self")
                .await
                .json::<Value>()
                .await
                .unwrap()["id"]
        );
        assert!(
            tokenvault_server::tenant_commands::create(&app.config, &"x".repeat(201), None)
                .await
                .is_err()
        );
    })
    .await;
}

#[tokio::test]
async fn deleting_a_tenant_revokes_every_key_and_spares_others() {
    on_each_backend(async |app| {
        let (_, key) = app.new_tenant(&unique("doomed")).await;
        let as_doomed = |method: Method, path: &str| app.request_as(Some(&key), method, path);
        let manager: Value = as_doomed(Method::POST, "/applications")
            .json(&json!({"name": "m", "type": "management", "permissions": ["application:read"]}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let private: Value = as_doomed(Method::POST, "/applications")
            .json(&json!({"name": "p", "type": "private", "permissions": ["token:read"]}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            as_doomed(Method::DELETE, "/tenants/self")
                .send()
                .await
                .unwrap()
                .status(),
            204
        );
        for k in [
            key.as_str(),
            manager["key"].as_str().unwrap(),
            private["key"].as_str().unwrap(),
        ] {
            let res = app
                .request_as(Some(k), Method::GET, "/applications/key")
                .send()
                .await
                .unwrap();
            assert_problem(res, 401).await;
        }
        // The bootstrap tenant is untouched.
        assert_eq!(app.get("/tenants/self").await.status(), 200);
    })
    .await;
}

/// Deduplication compares fingerprints: a token made before it was switched on is found only
/// if a fingerprint was computed for it then (the tenant fingerprinted, or the create asked for
/// one), by the same expression.
#[tokio::test]
async fn tokens_made_before_deduplication_are_found_only_when_they_were_fingerprinted() {
    on_each_backend(async |app| {
        let key = tokenvault_tests::full_private(app).await;
        let create = async |data: &str| {
            let res = app
                .request_as(Some(&key), reqwest::Method::POST, "/tokens")
                .json(&json!({"type": "token", "data": data}))
                .send()
                .await
                .unwrap();
            let status = res.status().as_u16();
            let body: serde_json::Value = res.json().await.unwrap();
            (status, body["id"].as_str().unwrap().to_string())
        };
        let settings = async |fingerprint: &str, dedup: &str| {
            let res = app
                .put(
                    "/tenants/self",
                    &json!({"name": "Default", "settings": {
                        "fingerprint_tokens": fingerprint, "deduplicate_tokens": dedup}}),
                )
                .await;
            assert_eq!(res.status(), 200);
        };
        let (_, plain) = create("made-plain").await;
        settings("true", "false").await;
        let (_, fingerprinted) = create("made-fingerprinted").await;
        settings("false", "true").await;
        let (status, id) = create("made-plain").await;
        assert_eq!(status, 201, "no fingerprint then: a new token");
        assert_ne!(id, plain);
        let (status, id) = create("made-fingerprinted").await;
        assert_eq!(status, 200, "fingerprinted then: found");
        assert_eq!(id, fingerprinted);
    })
    .await;
}

/// `tokenvault tenants list|show|delete`: the operator sees every tenant with its token
/// counts, and deleting one (only with `--yes`) revokes its keys and spares the others.
#[tokio::test]
async fn operator_lists_shows_and_deletes_tenants() {
    use tokenvault_server::tenant_commands;
    on_each_backend(async |app| {
        let (doomed, key) = app.new_tenant(&unique("doomed")).await;
        let doomed_id: uuid::Uuid = doomed["id"].as_str().unwrap().parse().unwrap();
        let writer = app
            .create_app_as(
                &key,
                &json!({"name": "w", "type": "private", "permissions": ["token:create"]}),
            )
            .await;
        let writer_key = writer["key"].as_str().unwrap();
        for data in ["a", "b"] {
            let res = app
                .request_as(Some(writer_key), Method::POST, "/tokens")
                .json(&json!({"type": "token", "data": data}))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 201);
        }

        let listed = tenant_commands::list(&app.config).await.unwrap();
        let ids: Vec<&str> = listed["tenants"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids.len(), 2, "{listed}");
        assert!(ids.contains(&doomed["id"].as_str().unwrap()));
        assert!(!listed.to_string().contains("key_"), "no key is listed");

        let shown = tenant_commands::show(&app.config, doomed_id).await.unwrap();
        assert_eq!(shown["tenant"]["name"], doomed["name"]);
        assert_eq!(shown["tokens"]["token"], 2, "{shown}");
        let missing = uuid::Uuid::new_v4();
        let err = tenant_commands::show(&app.config, missing)
            .await
            .unwrap_err();
        assert!(err.to_string().contains(&missing.to_string()), "{err}");

        let refused = tenant_commands::delete(&app.config, doomed_id, false).await;
        assert!(refused.unwrap_err().to_string().contains("--yes"));
        let res = app
            .request_as(Some(&key), Method::GET, "/tenants/self")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "nothing deleted without --yes");

        let deleted = tenant_commands::delete(&app.config, doomed_id, true)
            .await
            .unwrap();
        assert_eq!(deleted["deleted"], doomed_id.to_string());
        assert!(
            tenant_commands::delete(&app.config, doomed_id, true)
                .await
                .is_err()
        );
        let listed = tenant_commands::list(&app.config).await.unwrap();
        assert_eq!(listed["tenants"].as_array().unwrap().len(), 1);
        // The running server learns it at the key's next lookup.
        let mut revoked = false;
        for _ in 0..50 {
            let res = app
                .request_as(Some(writer_key), Method::POST, "/tokens")
                .json(&json!({"type": "token", "data": "late"}))
                .send()
                .await
                .unwrap();
            if res.status() == 401 {
                revoked = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert!(revoked, "the deleted tenant's keys stop working");
        assert_eq!(
            app.get("/tenants/self").await.status(),
            200,
            "others spared"
        );
    })
    .await;
}

/// A command closes the database it opened, as the server does when it stops: with no server
/// running, what `tenants create` wrote on SQLite is copied back from the log into the file
/// before the command answers (and the engine's threads have ended). The harness's own pool is
/// closed first: its checkpoint thread's passes would keep the command's last checkpoint from
/// emptying the log (as a running server's may, which is allowed).
#[tokio::test]
async fn a_command_closes_the_database_it_opened() {
    let mut app = TestApp::spawn(tokenvault_tests::DbBackend::Sqlite).await;
    app.shutdown().await.unwrap();
    app.close_harness_pool().await;
    let url = app.config.effective_database_url();
    let file = tokenvault_persistence::sqlite::backup::sqlite_file(&url).expect("a SQLite URL");
    let mut wal = file.into_os_string();
    wal.push("-wal");
    let made = tokenvault_server::tenant_commands::create(&app.config, "closed", None)
        .await
        .unwrap();
    assert!(made["management_key"].is_string());
    let logged = std::fs::metadata(&wal).map_or(0, |m| m.len());
    assert_eq!(
        logged, 0,
        "the command's writes are copied back from the log"
    );
    let listed = tokenvault_server::tenant_commands::list(&app.config)
        .await
        .unwrap();
    assert_eq!(listed["tenants"].as_array().unwrap().len(), 2, "{listed}");
}
