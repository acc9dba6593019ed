//! `/applications`: lifecycle, validation, pagination, expiry.

use std::time::Duration;

use serde_json::{Value, json};
use tokenvault_tests::{TestApp, assert_invalid, assert_problem, on_each_backend, unique};

fn is_key(v: &Value) -> bool {
    v.as_str().is_some_and(|k| {
        k.len() == 36 && k.starts_with("key_") && k[4..].bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

async fn count_apps(app: &TestApp) -> u64 {
    let page: Value = app.get("/applications").await.json().await.unwrap();
    page["pagination"]["total_items"].as_u64().unwrap()
}

#[tokio::test]
async fn lifecycle_shows_the_key_only_on_create_and_regenerate() {
    on_each_backend(async |app| {
        let created = app
            .create_app(&json!({
                "name": "backend", "type": "private", "permissions": ["token:read"],
                "rules": [{"description": "pci", "priority": 1, "container": "/PCI/",
                           "transform": "mask", "permissions": ["token:read", "token:use"]}],
            }))
            .await;
        assert!(is_key(&created["key"]));
        assert_eq!(created["type"], "private");
        assert_eq!(
            created["rules"][0]["container"], "/pci/",
            "containers are stored lower-case"
        );
        assert_eq!(created["rules"][0]["transform"], "mask");
        let id = created["id"].as_str().unwrap();
        let key = created["key"].as_str().unwrap();

        let read: Value = app
            .get(&format!("/applications/{id}"))
            .await
            .json()
            .await
            .unwrap();
        assert!(read.get("key").is_none());
        assert_eq!(read["name"], "backend");
        assert_eq!(read["created_at"], created["created_at"]);

        let updated = app
            .put(
                &format!("/applications/{id}"),
                &json!({"name": "renamed", "permissions": ["token:create"]}),
            )
            .await;
        assert_eq!(updated.status(), 200);
        let updated: Value = updated.json().await.unwrap();
        assert_eq!(updated["name"], "renamed");
        assert_eq!(updated["permissions"], json!(["token:create"]));
        assert_eq!(updated["rules"], json!([]));
        assert!(updated.get("key").is_none());
        assert!(updated["modified_at"].is_string());

        let regenerated = app
            .post(&format!("/applications/{id}/regenerate"), &json!(null))
            .await;
        assert_eq!(regenerated.status(), 200);
        let regenerated: Value = regenerated.json().await.unwrap();
        assert!(is_key(&regenerated["key"]));
        assert_ne!(regenerated["key"].as_str().unwrap(), key);
        // The old key is refused at once (401), the new one is valid (403: no management permission).
        let old = app
            .request_as(Some(key), reqwest::Method::GET, "/applications")
            .send()
            .await
            .unwrap();
        assert_problem(old, 401).await;
        let new = app
            .request_as(
                regenerated["key"].as_str(),
                reqwest::Method::GET,
                "/applications",
            )
            .send()
            .await
            .unwrap();
        assert_problem(new, 403).await;
        let listed = app
            .get(&format!("/applications?id={id}"))
            .await
            .text()
            .await
            .unwrap();
        assert!(!listed.contains(regenerated["key"].as_str().unwrap()));

        assert_eq!(
            app.delete(&format!("/applications/{id}")).await.status(),
            204
        );
        assert_problem(app.get(&format!("/applications/{id}")).await, 404).await;
        assert_problem(app.delete(&format!("/applications/{id}")).await, 404).await;
        let gone = app
            .request_as(
                regenerated["key"].as_str(),
                reqwest::Method::GET,
                "/applications",
            )
            .send()
            .await
            .unwrap();
        assert_problem(gone, 401).await;
    })
    .await;
}

#[tokio::test]
async fn application_of_the_key() {
    on_each_backend(async |app| {
        let me: Value = app.get("/applications/key").await.json().await.unwrap();
        assert_eq!(me["type"], "management");
        assert_eq!(me["permissions"].as_array().unwrap().len(), 17);
        assert!(me.get("key").is_none());
    })
    .await;
}

#[tokio::test]
async fn every_validation_rule_names_its_field_and_creates_nothing() {
    on_each_backend(async |app| {
        let before = count_apps(app).await;
        let rule = |priority: i64, container: &str, transform: &str, perms: Value| {
            json!({"priority": priority, "container": container, "transform": transform, "permissions": perms})
        };
        let cases: Vec<(Value, &[&str])> = vec![
            (json!({"type": "private", "permissions": ["token:read"]}), &["name"]),
            (json!({"name": "", "type": "private", "permissions": ["token:read"]}), &["name"]),
            (json!({"name": "n".repeat(201), "type": "private", "permissions": ["token:read"]}), &["name"]),
            (json!({"name": 123, "type": "private", "permissions": ["token:read"]}), &["name"]),
            (json!({"name": "a", "permissions": ["token:read"]}), &["type"]),
            (json!({"name": "a", "type": "root", "permissions": ["token:read"]}), &["type"]),
            (json!({"name": "a", "type": "private"}), &["permissions"]),
            (json!({"name": "a", "type": "private", "permissions": [], "rules": []}), &["permissions"]),
            (json!({"name": "a", "type": "private", "permissions": ["application:create"]}), &["permissions.0"]),
            (json!({"name": "a", "type": "public", "permissions": ["token:create", "token:read"]}), &["permissions.1"]),
            (json!({"name": "a", "type": "management", "permissions": ["token:create"]}), &["permissions.0"]),
            (json!({"name": "a", "type": "private", "permissions": ["token:teleport"]}), &["permissions.0"]),
            (json!({"name": "a", "type": "private", "permissions": "token:read"}), &["permissions"]),
            (json!({"name": "a", "type": "management", "permissions": ["tenant:read"],
                    "rules": [rule(1, "/", "reveal", json!(["tenant:read"]))]}), &["rules"]),
            (json!({"name": "a", "type": "private", "rules": [
                    {"priority": 1, "transform": "reveal", "permissions": ["token:read"]}]}), &["rules.0.container"]),
            (json!({"name": "a", "type": "private", "rules": [rule(1, "pci", "reveal", json!(["token:read"]))]}),
                &["rules.0.container"]),
            (json!({"name": "a", "type": "private", "rules": [
                    rule(1, "/a/", "reveal", json!(["token:read"])), rule(1, "/b/", "mask", json!(["token:read"]))]}),
                &["rules.1.priority"]),
            (json!({"name": "a", "type": "private", "rules": [rule(0, "/", "reveal", json!(["token:read"]))]}),
                &["rules.0.priority"]),
            (json!({"name": "a", "type": "private", "rules": [rule(1, "/", "encrypt", json!(["token:read"]))]}),
                &["rules.0.transform"]),
            (json!({"name": "a", "type": "private", "rules": [rule(1, "/", "mask", json!([]))]}),
                &["rules.0.permissions"]),
            (json!({"name": "a", "type": "public", "rules": [rule(1, "/", "mask", json!(["token:use"]))]}),
                &["rules.0.permissions.0"]),
            (json!({"name": "a", "type": "private", "rules": [{"priority": "first", "container": "/",
                    "transform": "mask", "permissions": ["token:read"]}]}), &["rules.0.priority"]),
            (json!({"name": "a", "type": "private", "rules": [{"priority": 1, "container": "/",
                    "conditions": [{"attribute": "id", "operator": "equals", "value": "x"}],
                    "transform": "mask", "permissions": ["token:read"]}]}), &["rules.0.conditions"]),
            (json!({"name": "a", "type": "private", "permissions": ["token:read"],
                    "expires_at": "2001-01-01T00:00:00Z"}), &["expires_at"]),
            (json!({"name": "a", "type": "private", "permissions": ["token:read"], "expires_at": "soon"}),
                &["expires_at"]),
        ];
        for (body, fields) in cases {
            let res = app.post("/applications", &body).await;
            assert_invalid(res, fields).await;
        }
        assert_eq!(count_apps(app).await, before, "a refused request created something");

        let private = app.app("private", &["token:read"]).await;
        let id = private["id"].as_str().unwrap();
        for (body, fields) in [
            (json!({"permissions": ["token:read"]}), &["name"][..]),
            (json!({"name": "a"}), &["permissions"][..]),
            (json!({"name": "a", "permissions": ["tenant:delete"]}), &["permissions.0"][..]),
            (json!({"name": "x".repeat(201), "permissions": ["token:read"]}), &["name"][..]),
        ] {
            assert_invalid(app.put(&format!("/applications/{id}"), &body).await, fields).await;
        }
        let unchanged: Value = app.get(&format!("/applications/{id}")).await.json().await.unwrap();
        assert_eq!(unchanged["name"], private["name"]);
        assert_eq!(unchanged["permissions"], json!(["token:read"]));
    })
    .await;
}

#[tokio::test]
async fn names_of_exactly_200_characters_are_accepted() {
    on_each_backend(async |app| {
        let name = "é".repeat(200);
        let created = app
            .create_app(&json!({"name": name, "type": "public", "permissions": ["token:create"]}))
            .await;
        assert_eq!(created["name"].as_str().unwrap().chars().count(), 200);
    })
    .await;
}

#[tokio::test]
async fn path_ids_must_be_uuids() {
    on_each_backend(async |app| {
        assert_invalid(app.get("/applications/abc").await, &["id"]).await;
        assert_invalid(app.delete("/applications/abc").await, &["id"]).await;
        assert_invalid(
            app.post("/applications/abc/regenerate", &json!(null)).await,
            &["id"],
        )
        .await;
        assert_problem(
            app.get("/applications/00000000-0000-4000-8000-000000000000")
                .await,
            404,
        )
        .await;
    })
    .await;
}

#[tokio::test]
async fn list_pages_newest_first_with_id_filters() {
    on_each_backend(async |app| {
        let mut ids = Vec::new();
        for _ in 0..5 {
            ids.push(
                app.app("private", &["token:read"]).await["id"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
        }
        let query = |extra: &str| {
            let mut q: Vec<String> = ids.iter().map(|id| format!("id={id}")).collect();
            q.push(extra.to_string());
            format!("/applications?{}", q.join("&"))
        };
        let page: Value = app.get(&query("page=3&size=2")).await.json().await.unwrap();
        assert_eq!(
            page["pagination"],
            json!({"total_items": 5, "page_number": 3, "page_size": 2, "total_pages": 3})
        );
        assert_eq!(page["data"].as_array().unwrap().len(), 1);
        assert_eq!(page["data"][0]["id"], ids[0], "oldest last");

        let all: Value = app.get(&query("size=100")).await.json().await.unwrap();
        let listed: Vec<&str> = all["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap())
            .collect();
        let newest_first: Vec<&str> = ids.iter().rev().map(String::as_str).collect();
        assert_eq!(listed, newest_first);
        assert!(
            all["data"]
                .as_array()
                .unwrap()
                .iter()
                .all(|a| a.get("key").is_none())
        );

        let brackets: Value = app
            .get(&format!("/applications?id[]={}&id[]={}", ids[1], ids[2]))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(brackets["pagination"]["total_items"], 2);

        let defaults: Value = app.get("/applications").await.json().await.unwrap();
        assert_eq!(defaults["pagination"]["page_number"], 1);
        assert_eq!(defaults["pagination"]["page_size"], 20);
        assert_eq!(
            defaults["pagination"]["total_items"], 6,
            "five and the bootstrap application"
        );

        for bad in ["size=0", "size=101", "page=0", "page=x", "size=-1"] {
            let field = bad.split('=').next().unwrap();
            assert_invalid(app.get(&format!("/applications?{bad}")).await, &[field]).await;
        }
        assert_invalid(app.get("/applications?id=nope").await, &["id"]).await;
        let empty: Value = app
            .get(&format!("/applications?id={}", uuid::Uuid::new_v4()))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(empty["data"], json!([]));
        assert_eq!(empty["pagination"]["total_pages"], 0);
    })
    .await;
}

#[tokio::test]
async fn expired_application_is_refused_at_once_then_deleted() {
    on_each_backend(async |app| {
        let expires = time::OffsetDateTime::now_utc() + time::Duration::seconds(2);
        let expires = expires
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap();
        let created = app
            .create_app(&json!({"name": unique("temp"), "type": "management",
                                "permissions": ["application:read"], "expires_at": expires}))
            .await;
        assert!(created["expires_at"].as_str().unwrap().ends_with('Z'));
        let key = created["key"].as_str().unwrap();
        let id = created["id"].as_str().unwrap();
        let ok = app
            .request_as(Some(key), reqwest::Method::GET, "/applications/key")
            .send()
            .await
            .unwrap();
        assert_eq!(ok.status(), 200);

        tokio::time::sleep(Duration::from_millis(2100)).await;
        let refused = app
            .request_as(Some(key), reqwest::Method::GET, "/applications/key")
            .send()
            .await
            .unwrap();
        assert_problem(refused, 401).await;

        // The sweep runs every second in tests; wait for it to delete the row.
        let mut deleted = false;
        for _ in 0..50 {
            if app.get(&format!("/applications/{id}")).await.status() == 404 {
                deleted = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(
            deleted,
            "the background job did not delete the expired application"
        );
    })
    .await;
}
