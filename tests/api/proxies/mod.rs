//! Proxies over HTTP on each database, against a real destination on a loopback port: CRUD,
//! forwarding, auth, detokenization, transforms, the vault's own errors, and the SSRF guard.

mod callers;
mod detokenize;
mod forwarding;
mod in_flight;
mod manage;
mod ssrf;
mod transforms;

use reqwest::{Method, Response};
use serde_json::{Value, json};
use tokenvault_server::Config;
use tokenvault_tests::{TestApp, unique};

use super::tokens::Client;

/// Loopback destinations allowed (the tests' own), over http.
pub(crate) fn loopback(config: &mut Config) {
    config.proxy.allow_http = true;
    config.proxy.allowed_hosts = vec!["127.0.0.1".into()];
    config.proxy.timeout_ms = 1_000;
}

pub(crate) async fn proxy(app: &TestApp, body: Value) -> Value {
    let res = app.post("/proxies", &body).await;
    assert_eq!(res.status(), 201, "create proxy");
    res.json().await.unwrap()
}

async fn simple(app: &TestApp, url: &str) -> Value {
    proxy(app, json!({"name": unique("p"), "destination_url": url})).await
}

pub(crate) async fn invoke(
    app: &TestApp,
    api_key: Option<&str>,
    proxy_key: &str,
    method: Method,
    tail: &str,
    body: Option<&Value>,
) -> Response {
    let mut req = app
        .request_as(api_key, method, &format!("/proxy{tail}"))
        .header("SVC-PROXY-KEY", proxy_key);
    if let Some(b) = body {
        req = req.json(b);
    }
    req.send().await.unwrap()
}

/// Asserts `{"proxy_error": <problem>}` with `status` and no destination status header.
async fn assert_proxy_error(res: Response, status: u16) -> Value {
    assert_eq!(res.status().as_u16(), status, "status");
    assert!(res.headers().get("svc-proxy-destination-status").is_none());
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["proxy_error"]["status"], status, "{body}");
    body["proxy_error"].clone()
}

/// A GET sent byte for byte as written (no client-side path normalization): status and body.
async fn raw_get(app: &TestApp, target: &str, api_key: &str, proxy_key: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = app.base.trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let request = format!(
        "GET {target} HTTP/1.1\r\nHost: {addr}\r\nSVC-API-KEY: {api_key}\r\n\
         SVC-PROXY-KEY: {proxy_key}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    (status, body)
}

/// The key of a private application with `token:use` in a tenant of its own.
async fn stranger(app: &TestApp) -> String {
    let (_, other) = app.new_tenant("other").await;
    let res = app
        .request_as(Some(&other), Method::POST, "/applications")
        .json(&json!({"name": "u", "type": "private", "permissions": ["token:use"]}))
        .send()
        .await
        .unwrap();
    let stranger: Value = res.json().await.unwrap();
    stranger["key"].as_str().unwrap().to_string()
}

pub(crate) async fn token(c: &Client<'_>, body: Value) -> String {
    let res = c.post("/tokens", &body).await;
    assert_eq!(res.status(), 201, "create token");
    let t: Value = res.json().await.unwrap();
    t["id"].as_str().unwrap().to_string()
}
