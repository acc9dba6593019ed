//! Sessions over HTTP on each database (docs/decisions.md §4, sessions): start with a public
//! key, authorize with a private key, act with the session key within its rules and its
//! authorizer's, and nothing else.

use reqwest::Method;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokenvault_tests::{
    TestApp, assert_invalid, assert_problem, full_private, on_each_backend, private_with, rule,
};

async fn send(
    app: &TestApp,
    key: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let mut req = app.request_as(Some(key), method, path);
    if let Some(body) = body {
        req = req.json(&body);
    }
    req.send().await.unwrap()
}

/// Starts a session with a new public application; returns `{session_key, nonce, expires_at}`.
async fn start(app: &TestApp) -> Value {
    let public = app.app("public", &["token:create"]).await;
    let res = send(
        app,
        public["key"].as_str().unwrap(),
        Method::POST,
        "/sessions",
        None,
    )
    .await;
    assert_eq!(res.status(), 201);
    res.json().await.unwrap()
}

async fn create_token(app: &TestApp, key: &str, body: Value) -> String {
    let res = send(app, key, Method::POST, "/tokens", Some(body)).await;
    assert_eq!(res.status(), 201);
    let token: Value = res.json().await.unwrap();
    token["id"].as_str().unwrap().to_string()
}

fn id_equals(id: &str, permissions: &[&str], transform: &str) -> Value {
    json!({"priority": 1, "transform": transform, "permissions": permissions,
           "conditions": [{"attribute": "id", "operator": "equals", "value": id}]})
}

fn in_seconds(seconds: i64) -> String {
    (OffsetDateTime::now_utc() + time::Duration::seconds(seconds))
        .format(&Rfc3339)
        .unwrap()
}

#[tokio::test]
async fn a_session_reads_only_the_tokens_its_conditions_select() {
    on_each_backend(async |app| {
        let full = full_private(app).await;
        let mine = create_token(app, &full, json!({"type": "token", "data": "secret-one"})).await;
        let other = create_token(app, &full, json!({"type": "token", "data": "secret-two"})).await;
        let session = start(app).await;
        let skey = session["session_key"].as_str().unwrap();
        assert!(skey.starts_with("key_"));
        assert!(OffsetDateTime::parse(session["expires_at"].as_str().unwrap(), &Rfc3339).is_ok());
        // Before authorization the key is refused.
        assert_problem(send(app, skey, Method::GET, &format!("/tokens/{mine}"), None).await, 401).await;

        let authorizer_app = app
            .create_app(&json!({"name": "authorizer", "type": "private", "permissions": ["token:read"],
                                "rules": [rule(1, "/", "reveal", &["token:read"])]}))
            .await;
        let authorizer = authorizer_app["key"].as_str().unwrap().to_string();
        let body = json!({"nonce": session["nonce"], "rules": [id_equals(&mine, &["token:read"], "reveal")]});
        let res = send(app, &authorizer, Method::POST, "/sessions/authorize", Some(body.clone())).await;
        assert_eq!(res.status(), 204);
        // The nonce works once.
        assert_invalid(send(app, &authorizer, Method::POST, "/sessions/authorize", Some(body)).await, &["nonce"]).await;

        let res = send(app, skey, Method::GET, &format!("/tokens/{mine}"), None).await;
        assert_eq!(res.status(), 200);
        let token: Value = res.json().await.unwrap();
        assert_eq!(token["data"], "secret-one");
        // A token its condition does not select: 403 alone, left out of lists.
        assert_problem(send(app, skey, Method::GET, &format!("/tokens/{other}"), None).await, 403).await;
        let list: Value = send(app, skey, Method::GET, "/tokens?size=100", None).await.json().await.unwrap();
        let ids: Vec<&str> = list["data"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
        assert_eq!(ids, [mine.as_str()]);
        assert_eq!(list["pagination"]["total_items"], 1);
        // Nothing but token permissions, and none it was not given.
        let detok = json!({"value": format!("{{{{ {mine} }}}}")});
        let res = send(app, skey, Method::POST, "/detokenize", Some(detok)).await;
        assert_eq!(res.status(), 200);
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["value"], "secret-one");
        let detok = json!({"value": format!("{{{{ {other} }}}}")});
        assert_problem(send(app, skey, Method::POST, "/detokenize", Some(detok)).await, 403).await;
        for (method, path) in [
            (Method::GET, "/applications"),
            (Method::GET, "/applications/key"),
            (Method::GET, "/tenants/self"),
            (Method::GET, "/tenants/self/reports/usage"),
            (Method::GET, "/proxies"),
            (Method::GET, "/reactors"),
            (Method::POST, "/sessions"),
        ] {
            let res = send(app, skey, method.clone(), path, None).await;
            assert_eq!(res.status(), 403, "{method} {path}");
        }
        let again = json!({"nonce": session["nonce"], "permissions": ["token:read"]});
        assert_problem(send(app, skey, Method::POST, "/sessions/authorize", Some(again)).await, 403).await;
        // A new key for the authorizer ends what its old key authorized.
        let id = authorizer_app["id"].as_str().unwrap();
        let res = app.request(Method::POST, &format!("/applications/{id}/regenerate")).send().await.unwrap();
        assert_eq!(res.status(), 200);
        assert_problem(send(app, skey, Method::GET, &format!("/tokens/{mine}"), None).await, 401).await;
    })
    .await;
}

#[tokio::test]
async fn the_authorizer_caps_what_a_session_may_do() {
    on_each_backend(async |app| {
        let full = full_private(app).await;
        let card = create_token(app, &full, json!({"type": "card_number", "data": "4242424242424242"})).await;
        // The authorizer may only read masked; the session asks to reveal.
        let reader = app.app("private", &["token:read"]).await;
        let masked_reader = reader["key"].as_str().unwrap().to_string();
        let session = start(app).await;
        let body = json!({"nonce": session["nonce"], "rules": [id_equals(&card, &["token:read"], "reveal")]});
        let res = send(app, &masked_reader, Method::POST, "/sessions/authorize", Some(body)).await;
        assert_eq!(res.status(), 204);
        let skey = session["session_key"].as_str().unwrap();
        let token: Value = send(app, skey, Method::GET, &format!("/tokens/{card}"), None).await.json().await.unwrap();
        assert_eq!(token["id"], card.as_str());
        assert_ne!(token["data"], "4242424242424242", "the authorizer's mask caps the reveal");

        // A permission the authorizer does not hold: 403, and the nonce is still usable.
        let session = start(app).await;
        let body = json!({"nonce": session["nonce"], "permissions": ["token:use"]});
        assert_problem(send(app, &masked_reader, Method::POST, "/sessions/authorize", Some(body)).await, 403).await;
        let body = json!({"nonce": session["nonce"], "rules": [id_equals(&card, &["token:delete"], "reveal")]});
        assert_problem(send(app, &masked_reader, Method::POST, "/sessions/authorize", Some(body)).await, 403).await;
        let body = json!({"nonce": session["nonce"], "permissions": ["token:read"]});
        let res = send(app, &masked_reader, Method::POST, "/sessions/authorize", Some(body)).await;
        assert_eq!(res.status(), 204);
        // Deleting the authorizer ends its sessions.
        let skey = session["session_key"].as_str().unwrap();
        assert_eq!(send(app, skey, Method::GET, &format!("/tokens/{card}"), None).await.status(), 200);
        // A session key holds token permissions only: `GET /permissions` is not for it.
        assert_problem(send(app, skey, Method::GET, "/permissions", None).await, 403).await;
        let authorizer_id = reader["id"].as_str().unwrap();
        assert_eq!(app.delete(&format!("/applications/{authorizer_id}")).await.status(), 204);
        assert_problem(send(app, skey, Method::GET, &format!("/tokens/{card}"), None).await, 401).await;
    })
    .await;
}

#[tokio::test]
async fn conditions_on_containers_scope_creation() {
    on_each_backend(async |app| {
        let creator = private_with(app, &["token:create"], json!([])).await;
        let session = start(app).await;
        let body = json!({"nonce": session["nonce"], "rules": [{
            "priority": 1, "transform": "mask", "permissions": ["token:create"],
            "conditions": [{"attribute": "container", "operator": "starts_with", "value": "/PCI/"}]}]});
        let res = send(app, &creator, Method::POST, "/sessions/authorize", Some(body)).await;
        assert_eq!(res.status(), 204);
        let skey = session["session_key"].as_str().unwrap();
        let inside = json!({"type": "token", "data": "x", "containers": ["/pci/high/"]});
        assert_eq!(send(app, skey, Method::POST, "/tokens", Some(inside)).await.status(), 201);
        let outside = json!({"type": "token", "data": "x", "containers": ["/bank/"]});
        assert_problem(send(app, skey, Method::POST, "/tokens", Some(outside)).await, 403).await;
    })
    .await;
}

#[tokio::test]
async fn who_may_start_and_authorize_and_for_how_long() {
    on_each_backend(async |app| {
        // Only public keys start sessions; only private keys authorize them.
        let private = private_with(app, &["token:read"], json!([])).await;
        assert_problem(send(app, &private, Method::POST, "/sessions", None).await, 403).await;
        assert_problem(send(app, &app.key, Method::POST, "/sessions", None).await, 403).await;
        assert_problem(app.request_as(None, Method::POST, "/sessions").send().await.unwrap(), 401).await;
        let session = start(app).await;
        let public = app.app("public", &["token:create"]).await;
        let body = json!({"nonce": session["nonce"], "permissions": ["token:create"]});
        assert_problem(send(app, public["key"].as_str().unwrap(), Method::POST, "/sessions/authorize", Some(body)).await, 403).await;

        // Lifetime: in the future and at most an hour; every field named.
        for expires_at in [in_seconds(2 * 3600), in_seconds(-5)] {
            let body = json!({"nonce": session["nonce"], "permissions": ["token:read"], "expires_at": expires_at});
            assert_invalid(send(app, &private, Method::POST, "/sessions/authorize", Some(body)).await, &["expires_at"]).await;
        }
        let body = json!({"nonce": "nope", "rules": [{"priority": 1, "container": "/", "transform": "reveal",
                                                      "permissions": ["token:read"]}]});
        assert_invalid(send(app, &private, Method::POST, "/sessions/authorize", Some(body)).await,
                       &["nonce", "rules.0.container", "rules.0.conditions"]).await;
        // Another tenant's private key cannot authorize this tenant's session.
        let (_, other_mgmt) = app.new_tenant("other").await;
        let other = app
            .request_as(Some(&other_mgmt), Method::POST, "/applications")
            .json(&json!({"name": "p", "type": "private", "permissions": ["token:read"]}))
            .send().await.unwrap();
        let other: Value = other.json().await.unwrap();
        let body = json!({"nonce": session["nonce"], "permissions": ["token:read"]});
        assert_invalid(send(app, other["key"].as_str().unwrap(), Method::POST, "/sessions/authorize", Some(body)).await, &["nonce"]).await;

        // A short session works, then is refused.
        let full = full_private(app).await;
        let id = create_token(app, &full, json!({"type": "token", "data": "d"})).await;
        let body = json!({"nonce": session["nonce"], "permissions": ["token:read"], "expires_at": in_seconds(2)});
        assert_eq!(send(app, &private, Method::POST, "/sessions/authorize", Some(body)).await.status(), 204);
        let skey = session["session_key"].as_str().unwrap();
        assert_eq!(send(app, skey, Method::GET, &format!("/tokens/{id}"), None).await.status(), 200);
        tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
        assert_problem(send(app, skey, Method::GET, &format!("/tokens/{id}"), None).await, 401).await;
    })
    .await;
}
