//! Who may call a proxy: a key of its tenant holding `token:use`, the vault's own 4xx answers,
//! and the right to lend an application to a proxy or a reactor.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::destination::Destination;
use tokenvault_tests::{assert_problem, on_each_backend_with};

use super::{assert_proxy_error, invoke, loopback, raw_get, simple, stranger};
use crate::tokens::with;

#[tokio::test]
async fn callers_need_a_key_of_the_tenant_holding_token_use() {
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let p = simple(app, &dest.url).await;
        let key = p["key"].as_str().unwrap();
        assert_proxy_error(
            invoke(app, None, key, Method::POST, "", Some(&json!({}))).await,
            401,
        )
        .await;
        let reader = with(app, &["token:read"], json!([])).await;
        assert_proxy_error(
            invoke(
                app,
                Some(&reader.key),
                key,
                Method::POST,
                "",
                Some(&json!({})),
            )
            .await,
            403,
        )
        .await;
        let stranger = stranger(app).await;
        let res = invoke(
            app,
            Some(&stranger),
            key,
            Method::POST,
            "",
            Some(&json!({})),
        )
        .await;
        assert_proxy_error(res, 401).await;
        // No proxy key, an unknown one.
        let caller = with(app, &["token:use"], json!([])).await;
        let res = app
            .request_as(Some(&caller.key), Method::POST, "/proxy/x")
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_proxy_error(res, 400).await;
        assert_proxy_error(
            invoke(
                app,
                Some(&caller.key),
                &"A".repeat(32),
                Method::GET,
                "",
                None,
            )
            .await,
            401,
        )
        .await;
        // A body over the limit is the vault's own error too.
        let huge = json!({"pad": "x".repeat(app.config.http.body_limit)});
        let res = invoke(app, Some(&caller.key), key, Method::POST, "", Some(&huge)).await;
        assert_proxy_error(res, 413).await;
        // The tail stays below the destination's path. Sent raw: an HTTP client library
        // resolves dot segments (also percent-encoded ones) before sending.
        for tail in [
            "/%2e%2e/admin",
            "/a/%2E/b",
            "/x%3Fy=1",
            "/x%23frag",
            "/../admin",
        ] {
            let (status, body) = raw_get(app, &format!("/proxy{tail}"), &caller.key, key).await;
            assert_eq!(status, 400, "{tail}: {body}");
            let body: Value = serde_json::from_str(&body).unwrap();
            assert!(
                body["proxy_error"]["errors"]["path"].is_array(),
                "{tail}: {body}"
            );
        }
        assert!(dest.received().is_empty());
        dest.assert_no_connection("a refused call").await;
        // Attaching an application lends its token rights: it needs application:create or
        // application:update, for proxies and reactors alike.
        let lender = app.app("private", &["token:use", "token:read"]).await;
        let limited = app
            .app(
                "management",
                &["proxy:create", "reactor:create", "reactor:read"],
            )
            .await;
        let res = app
            .request_as(limited["key"].as_str(), Method::POST, "/proxies")
            .json(
                &json!({"name": "lend", "destination_url": dest.url, "require_auth": false,
                          "application": {"id": lender["id"]}}),
            )
            .send()
            .await
            .unwrap();
        assert_problem(res, 403).await;
        let res = app
            .request_as(limited["key"].as_str(), Method::POST, "/proxies")
            .json(&json!({"name": "plain", "destination_url": dest.url}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
        let res = app
            .post(
                "/reactor-formulas",
                &json!({"name": "f", "code": "module.exports = () => ({});"}),
            )
            .await;
        let formula: Value = res.json().await.unwrap();
        let res = app
            .request_as(limited["key"].as_str(), Method::POST, "/reactors")
            .json(
                &json!({"name": "r", "configuration": {}, "formula": {"id": formula["id"]},
                          "application": {"id": lender["id"]}}),
            )
            .send()
            .await
            .unwrap();
        assert_problem(res, 403).await;
    })
    .await;
}
