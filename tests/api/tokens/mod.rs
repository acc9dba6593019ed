//! Tokens over HTTP: every endpoint, every transform, the 4xx answers, dedup under concurrency,
//! encryption at rest and master key rotation — on each database.

mod access;
mod at_rest;
mod create;
mod dedup;
mod lifecycle;
mod lists;
mod tokenize;

use reqwest::{Method, Response};
use serde_json::Value;
use tokenvault_tests::{TestApp, full_private, private_with};

const CARD: &str = "4242424242424242";

pub(crate) struct Client<'a> {
    pub(crate) app: &'a TestApp,
    pub(crate) key: String,
}

impl Client<'_> {
    pub(crate) async fn send(&self, method: Method, path: &str, body: Option<&Value>) -> Response {
        let mut req = self.app.request_as(Some(&self.key), method, path);
        if let Some(b) = body {
            req = req.json(b);
        }
        req.send().await.unwrap()
    }
    pub(crate) async fn post(&self, path: &str, body: &Value) -> Response {
        self.send(Method::POST, path, Some(body)).await
    }
    pub(crate) async fn get(&self, path: &str) -> Response {
        self.send(Method::GET, path, None).await
    }
    pub(crate) async fn delete(&self, path: &str) -> Response {
        self.send(Method::DELETE, path, None).await
    }
    pub(crate) async fn patch(&self, path: &str, body: &Value) -> Response {
        self.app
            .request_as(Some(&self.key), Method::PATCH, path)
            .header("content-type", "application/merge-patch+json")
            .body(body.to_string())
            .send()
            .await
            .unwrap()
    }
    pub(crate) async fn create(&self, body: &Value) -> Value {
        let res = self.post("/tokens", body).await;
        assert_eq!(res.status(), 201, "create token");
        let token: Value = res.json().await.unwrap();
        assert!(
            token.get("data").is_none(),
            "create responses never carry data"
        );
        token
    }
    pub(crate) async fn read(&self, id: &str) -> Value {
        let res = self.get(&format!("/tokens/{id}")).await;
        assert_eq!(res.status(), 200, "read token");
        res.json().await.unwrap()
    }
}

pub(crate) async fn full(app: &TestApp) -> Client<'_> {
    Client {
        app,
        key: full_private(app).await,
    }
}

pub(crate) async fn with<'a>(app: &'a TestApp, permissions: &[&str], rules: Value) -> Client<'a> {
    Client {
        app,
        key: private_with(app, permissions, rules).await,
    }
}
