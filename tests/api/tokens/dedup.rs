//! Fingerprints and deduplication, per token and per tenant, and under fifty concurrent creates.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_persistence::testing::backends;
use tokenvault_tests::{TestApp, full_private, on_each_backend};

use super::{CARD, full};

#[tokio::test]
async fn fingerprints_and_deduplication() {
    on_each_backend(async |app| {
        let c = full(app).await;
        let plain = c.create(&json!({"type": "card_number", "data": CARD})).await;
        assert!(plain.get("fingerprint").is_none(), "off by default");
        let fp = c.create(&json!({"type": "card_number", "data": CARD, "fingerprint_expression": "{{ data }}"})).await;
        let fp2 = c.create(&json!({"type": "card_number", "data": CARD, "fingerprint_expression": "{{ data }}"})).await;
        let f = fp["fingerprint"].as_str().unwrap();
        assert!(f.chars().all(|ch| ch.is_ascii_alphanumeric() && !"0OIl".contains(ch)), "base58");
        assert_eq!(f, fp2["fingerprint"].as_str().unwrap());
        assert!(!f.contains("4242"));
        // Per-token deduplication returns the existing token with 200.
        let first = c.post("/tokens", &json!({"type": "social_security_number", "data": "123-45-6789", "deduplicate_token": true})).await;
        assert_eq!(first.status(), 201);
        let first: Value = first.json().await.unwrap();
        let again = c.post("/tokens", &json!({"type": "social_security_number", "data": "123456789", "deduplicate_token": true})).await;
        assert_eq!(again.status(), 200, "digits only: the same SSN");
        assert_eq!(again.json::<Value>().await.unwrap()["id"], first["id"]);
        // An update keeps per-token deduplication and the fingerprint; new data changes it.
        let first_id = first["id"].as_str().unwrap();
        let patched = c.patch(&format!("/tokens/{first_id}"), &json!({"metadata": {"k": "v"}})).await;
        assert_eq!(patched.status(), 200);
        assert_eq!(patched.json::<Value>().await.unwrap()["fingerprint"], first["fingerprint"]);
        let third = c.post("/tokens", &json!({"type": "social_security_number", "data": "123456789", "deduplicate_token": true})).await;
        assert_eq!(third.status(), 200);
        assert_eq!(third.json::<Value>().await.unwrap()["id"], first["id"]);
        let changed = c.patch(&format!("/tokens/{first_id}"), &json!({"data": "987-65-4321"})).await;
        let changed: Value = changed.json().await.unwrap();
        assert!(changed["fingerprint"].is_string());
        assert_ne!(changed["fingerprint"], first["fingerprint"]);
        // Tenant settings.
        assert_eq!(app.put("/tenants/self", &json!({"name": "Default", "settings": {"fingerprint_tokens": "true"}})).await.status(), 200);
        let c2 = full(app).await;
        let fingerprinted = c2.create(&json!({"type": "token", "data": {"b": 1, "a": 2}})).await;
        let reordered = c2.create(&json!({"type": "token", "data": {"a": 2, "b": 1}})).await;
        assert_eq!(fingerprinted["fingerprint"], reordered["fingerprint"], "canonical JSON");
    })
    .await;
}

#[tokio::test]
async fn fifty_concurrent_identical_creates_make_one_token() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.http.workers = Some(2)).await;
        assert_eq!(
            app.put(
                "/tenants/self",
                &json!({"name": "Default", "settings": {"deduplicate_tokens": "true"}})
            )
            .await
            .status(),
            200
        );
        let key = full_private(&app).await;
        let url = format!("{}/tokens", app.base);
        let client = reqwest::Client::new();
        let body = json!({"type": "card_number", "data": CARD});
        let mut tasks = Vec::new();
        for _ in 0..50 {
            let (client, url, key, body) = (client.clone(), url.clone(), key.clone(), body.clone());
            tasks.push(tokio::spawn(async move {
                let res = client
                    .post(url)
                    .header("SVC-API-KEY", key)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                let status = res.status().as_u16();
                let id = res.json::<Value>().await.unwrap()["id"]
                    .as_str()
                    .map(str::to_owned);
                (status, id)
            }));
        }
        let mut statuses = Vec::new();
        let mut ids = std::collections::BTreeSet::new();
        for t in tasks {
            let (status, id) = t.await.unwrap();
            statuses.push(status);
            ids.extend(id);
        }
        assert!(
            statuses.iter().all(|s| *s == 200 || *s == 201),
            "{backend:?}: {statuses:?}"
        );
        assert_eq!(
            statuses.iter().filter(|s| **s == 201).count(),
            1,
            "{backend:?}: exactly one create"
        );
        assert_eq!(
            ids.len(),
            1,
            "{backend:?}: every answer names the same token"
        );
        let listed: Value = app
            .request_as(Some(&key), Method::GET, "/tokens?type=card_number")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(listed["pagination"]["total_items"], 1, "{backend:?}");
        app.stop().await;
    }
}
