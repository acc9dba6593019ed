//! The console's tokens and proxies pages in the browser: a search and a read show what the
//! key's own rules give (masked here) and never more; a management key is refused tokens; a
//! proxy made on the page is listed and a test call through it shows who answered.

use serde_json::json;
use tokenvault_tests::{full_private, on_each_backend, private_with, rule};

use crate::browser::Browser;
use crate::{log_in_with, nav};

#[tokio::test]
async fn tokens_are_read_under_the_keys_own_rules() {
    on_each_backend(async |app| {
        let writer = full_private(app).await;
        let made = app
            .request_as(Some(&writer), reqwest::Method::POST, "/tokens")
            .json(&json!({"type": "social_security_number", "data": "123-45-6789"}))
            .send()
            .await
            .unwrap();
        assert_eq!(made.status(), 201);
        let token: serde_json::Value = made.json().await.unwrap();
        let masked = private_with(
            app,
            &[],
            json!([rule(1, "/", "mask", &["token:read", "token:search"])]),
        )
        .await;
        let b = Browser::start().await;
        // The bootstrap key manages; it reads no token data.
        log_in_with(&b, app, &app.key).await;
        nav(&b, "tokens").await;
        b.type_into("#token-query", "data:6789").await;
        b.click("#token-search").await;
        b.text_until("#token-results", |t| t.contains("403")).await;
        b.click("#logout").await;
        log_in_with(&b, app, &masked).await;
        nav(&b, "tokens").await;
        b.type_into("#token-query", "data:6789").await;
        b.click("#token-search").await;
        let found = b
            .text_until("#token-results", |t| t.contains("1 found"))
            .await;
        assert!(found.contains("XXX-XX-6789"), "{found}");
        b.type_into("#token-id", token["id"].as_str().unwrap())
            .await;
        b.click("#token-get").await;
        let read = b
            .text_until("#token-read", |t| t.contains("XXX-XX-6789"))
            .await;
        let shown = b.script("return document.body.textContent", vec![]).await;
        assert!(
            !shown.as_str().unwrap().contains("123-45-6789"),
            "the page never holds more than the key may see: {read}"
        );
        b.stop().await;
    })
    .await;
}

#[tokio::test]
async fn a_proxy_made_on_the_page_is_listed_and_called() {
    on_each_backend(async |app| {
        let b = Browser::start().await;
        log_in_with(&b, app, &app.key).await;
        nav(&b, "proxies").await;
        b.type_into("#proxy-name", "charge").await;
        b.type_into("#proxy-destination", "https://api.processor.example/v1")
            .await;
        b.click("#proxy-create").await;
        b.text_until("#proxy-list", |t| {
            t.contains("https://api.processor.example/v1")
        })
        .await;
        let listed: serde_json::Value = app.get("/proxies").await.json().await.unwrap();
        assert_eq!(listed["data"][0]["require_auth"], true, "{listed}");
        b.click("#proxy-list button.quiet").await;
        b.click("#proxy-send").await;
        // require_auth and no API key given for the call: the vault answers, nothing is sent.
        let out = b
            .text_until("#proxy-output", |t| t.contains("answered by the vault"))
            .await;
        assert!(out.starts_with("401"), "{out}");
        b.stop().await;
    })
    .await;
}
