//! Tokens over HTTP, the findings of the core's security review (docs/decisions.md §6) — on
//! each database.

use std::time::{Duration, Instant};

use serde_json::json;
use tokenvault_tests::{TestApp, assert_invalid, on_each_backend, unique};

use crate::tokens::{Client, full, with};

async fn public<'a>(app: &'a TestApp, permissions: &[&str]) -> Client<'a> {
    let created = app
        .create_app(&json!({"name": unique("pub"), "type": "public", "permissions": permissions}))
        .await;
    Client {
        app,
        key: created["key"].as_str().unwrap().to_string(),
    }
}

/// Finding 1: `{{ data | uniq | size }}` over 20,000 items took 3.4 s per render on the HTTP
/// worker. Quadratic work over a large array is refused at once: a 400 naming the field.
#[tokio::test]
async fn costly_expressions_are_refused_at_once_naming_the_field() {
    on_each_backend(async |app| {
        let items: Vec<String> = (0..20_000).map(|i| format!("v{i}")).collect();
        let collector = public(app, &["token:create"]).await;
        for field in ["mask", "fingerprint_expression"] {
            let started = Instant::now();
            let body = json!({"type": "token", "data": items, field: "{{ data | uniq | size }}"});
            assert_invalid(collector.post("/tokens", &body).await, &[field]).await;
            assert!(
                started.elapsed() < Duration::from_secs(2),
                "{field}: refused, not run ({:?})",
                started.elapsed()
            );
        }
        // A mask fine on small data is refused when a PATCH makes the data large.
        let owner = full(app).await;
        let t = owner
            .create(&json!({"type": "token", "data": [1, 2, 1], "mask": "{{ data | uniq | join: ',' }}"}))
            .await;
        let path = format!("/tokens/{}", t["id"].as_str().unwrap());
        let reader = with(app, &["token:read"], json!([])).await;
        assert_eq!(reader.read(t["id"].as_str().unwrap()).await["data"], "1,2");
        let started = Instant::now();
        assert_invalid(owner.patch(&path, &json!({"data": items})).await, &["mask"]).await;
        let res = owner
            .patch(&path, &json!({"data": [3], "mask": "{{ data | uniq | size }}"}))
            .await;
        assert_eq!(res.status(), 200);
        assert_invalid(owner.patch(&path, &json!({"data": items})).await, &["mask"]).await;
        assert!(started.elapsed() < Duration::from_secs(3));
        assert_eq!(reader.read(t["id"].as_str().unwrap()).await["data"], "1");
    })
    .await;
}
