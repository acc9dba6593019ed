//! Permissions and access rules on every token operation, and another tenant that sees nothing.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::{assert_problem, on_each_backend, rule, unique};

use super::{CARD, Client, full, with};

#[tokio::test]
async fn permissions_and_rules_decide_every_operation() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let card = owner.create(&json!({"type": "card_number", "data": CARD})).await;
        let plain = owner.create(&json!({"type": "token", "data": "plain-secret"})).await;
        let (card_id, plain_id) = (card["id"].as_str().unwrap(), plain["id"].as_str().unwrap());

        let mgmt = Client { app, key: app.key.clone() };
        assert_problem(mgmt.post("/tokens", &json!({"type": "token", "data": "x"})).await, 403).await;

        let public = Client { app, key: app.app("public", &["token:create"]).await["key"].as_str().unwrap().to_string() };
        let by_public = public.create(&json!({"type": "token", "data": "from-browser"})).await;
        assert_problem(public.get(&format!("/tokens/{}", by_public["id"].as_str().unwrap())).await, 403).await;

        // Plain token:read → implicit mask.
        let reader = with(app, &["token:read"], json!([])).await;
        assert_eq!(reader.read(card_id).await["data"], "XXXXXXXXXXXX4242");
        assert!(reader.read(plain_id).await.get("data").is_none(), "mask without a mask: no data");
        // First matching rule by priority decides; descendants are covered.
        let ruled = with(app, &[], json!([
            rule(2, "/", "redact", &["token:read"]),
            rule(1, "/pci/", "reveal", &["token:read"]),
        ])).await;
        assert_eq!(ruled.read(card_id).await["data"], CARD);
        assert!(ruled.read(plain_id).await.get("data").is_none(), "redact");
        // A rule on another container, or without the permission, does not grant.
        let elsewhere = with(app, &[], json!([rule(1, "/bank/", "reveal", &["token:read"]), rule(2, "/pci/", "reveal", &["token:create"])])).await;
        assert_problem(elsewhere.get(&format!("/tokens/{card_id}")).await, 403).await;
        // Lists count only what the caller may read.
        let listed: Value = ruled.get("/tokens?size=100").await.json().await.unwrap();
        assert_eq!(listed["pagination"]["total_items"], 3);
        let pci_only = with(app, &[], json!([rule(1, "/pci/", "mask", &["token:read"])])).await;
        let listed: Value = pci_only.get("/tokens").await.json().await.unwrap();
        assert_eq!(listed["pagination"]["total_items"], 1);
        assert_eq!(listed["data"][0]["data"], "XXXXXXXXXXXX4242");
        // Create into a container needs token:create there.
        let creator = with(app, &[], json!([rule(1, "/general/", "mask", &["token:create"])])).await;
        creator.create(&json!({"type": "token", "data": "ok"})).await;
        assert_problem(creator.post("/tokens", &json!({"type": "card_number", "data": CARD})).await, 403).await;
        // Update and delete need their own permissions.
        assert_problem(reader.patch(&format!("/tokens/{plain_id}"), &json!({"metadata": {"a": "b"}})).await, 403).await;
        assert_problem(reader.delete(&format!("/tokens/{plain_id}")).await, 403).await;
        assert_eq!(owner.read(plain_id).await["metadata"], json!({}));

        // Another tenant sees nothing.
        let (_, other_mgmt) = app.new_tenant(&unique("other")).await;
        let other_key: Value = app
            .request_as(Some(&other_mgmt), Method::POST, "/applications")
            .json(&json!({"name": "o", "type": "private", "permissions": ["token:read", "token:delete", "token:update"]}))
            .send().await.unwrap().json().await.unwrap();
        let other = Client { app, key: other_key["key"].as_str().unwrap().to_string() };
        assert_problem(other.get(&format!("/tokens/{card_id}")).await, 404).await;
        assert_problem(other.delete(&format!("/tokens/{card_id}")).await, 404).await;
        assert_problem(other.patch(&format!("/tokens/{card_id}"), &json!({"metadata": {}})).await, 404).await;
        let theirs: Value = other.get("/tokens").await.json().await.unwrap();
        assert_eq!(theirs["pagination"]["total_items"], 0);
    })
    .await;
}
