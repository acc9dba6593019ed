//! problem+json for every failure, framework errors included; trace ids.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::{assert_invalid, assert_problem, on_each_backend};

#[tokio::test]
async fn framework_errors_are_problems() {
    on_each_backend(async |app| {
        assert_problem(app.get("/no/such/route").await, 404).await;
        assert_problem(app.delete("/applications").await, 405).await;
        assert_problem(
            app.request(Method::PATCH, "/tenants/self")
                .send()
                .await
                .unwrap(),
            405,
        )
        .await;
        let bad_json = app
            .request(Method::POST, "/applications")
            .header("content-type", "application/json")
            .body("{not json")
            .send()
            .await
            .unwrap();
        assert_invalid(bad_json, &["body"]).await;
        let empty = app
            .request(Method::POST, "/applications")
            .header("content-type", "application/json")
            .send()
            .await
            .unwrap();
        assert_invalid(empty, &["body"]).await;
        let not_object = app.post("/applications", &json!([1, 2])).await;
        assert_problem(not_object, 400).await;
        let text = app
            .request(Method::POST, "/applications")
            .header("content-type", "text/plain")
            .body("hello")
            .send()
            .await
            .unwrap();
        assert_problem(text, 415).await;
    })
    .await;
}

#[tokio::test]
async fn oversized_and_deep_bodies_are_refused() {
    on_each_backend(async |app| {
        let big = json!({"name": "x".repeat(1024 * 1024 + 10), "type": "private", "permissions": ["token:read"]});
        assert_problem(app.post("/applications", &big).await, 413).await;
        let mut deep = json!("leaf");
        for _ in 0..70 {
            deep = json!([deep]);
        }
        let body = json!({"name": "a", "type": "private", "permissions": ["token:read"], "extra": deep});
        assert_invalid(app.post("/applications", &body).await, &["body"]).await;
        // The server is still fine.
        assert_eq!(app.get("/applications/key").await.status(), 200);
    })
    .await;
}

#[tokio::test]
async fn unknown_fields_are_ignored() {
    on_each_backend(async |app| {
        let res = app
            .post("/applications", &json!({"name": "a", "type": "private", "permissions": ["token:read"], "color": {"x": 1}}))
            .await;
        assert_eq!(res.status(), 201);
    })
    .await;
}

#[tokio::test]
async fn trace_id_is_echoed_or_generated_and_in_problems() {
    on_each_backend(async |app| {
        let res = app
            .request(Method::GET, "/tenants/self")
            .header("SVC-TRACE-ID", "trace-abc-123")
            .send()
            .await
            .unwrap();
        assert_eq!(res.headers()["svc-trace-id"], "trace-abc-123");
        let a = app.get("/tenants/self").await.headers()["svc-trace-id"].clone();
        let b = app.get("/tenants/self").await.headers()["svc-trace-id"].clone();
        assert_ne!(a, b);
        let res = app
            .request_as(None, Method::GET, "/applications")
            .header("SVC-TRACE-ID", "trace-for-401")
            .send()
            .await
            .unwrap();
        assert_eq!(res.headers()["svc-trace-id"], "trace-for-401");
        let body: Value = assert_problem(res, 401).await;
        assert_eq!(body["trace_id"], "trace-for-401");
        let res = app
            .request(Method::GET, "/nowhere")
            .header("SVC-TRACE-ID", "t-404")
            .send()
            .await
            .unwrap();
        assert_eq!(assert_problem(res, 404).await["trace_id"], "t-404");
    })
    .await;
}

/// A field of the wrong type is named without echoing the value, even a value that reads like
/// the error's own words (before, the text after its first "expected " was echoed).
#[tokio::test]
async fn a_type_error_never_echoes_the_value() {
    on_each_backend(async |app| {
        let res = app
            .post(
                "/applications",
                &json!({"name": "n", "type": "private", "permissions": ["token:read"],
                        "rules": [{"priority": "x, expected 4242424242424242 and more",
                                   "container": "/", "transform": "reveal",
                                   "permissions": ["token:read"]}]}),
            )
            .await;
        let body = assert_problem(res, 400).await;
        assert!(body["errors"]["rules.0.priority"].is_array(), "{body}");
        assert!(!body.to_string().contains("4242"), "{body}");
    })
    .await;
}
