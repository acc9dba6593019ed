//! `SVC-IDEMPOTENCY-KEY` over HTTP on each database: replay of the first success (key
//! included), per application, 422 for another request, failures not stored, concurrency.

use reqwest::{Method, Response};
use serde_json::{Value, json};
use tokenvault_tests::{TestApp, assert_problem, on_each_backend, unique};

async fn send(
    app: &TestApp,
    key: &str,
    idem: &str,
    method: Method,
    path: &str,
    body: &Value,
) -> Response {
    app.request_as(Some(key), method, path)
        .header("SVC-IDEMPOTENCY-KEY", idem)
        .json(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_repeat_replays_the_first_success_and_creates_nothing() {
    on_each_backend(async |app| {
        let idem = unique("idem");
        let body = json!({"name": unique("app"), "type": "private", "permissions": ["token:read"]});
        let first = send(app, &app.key, &idem, Method::POST, "/applications", &body).await;
        assert_eq!(first.status(), 201);
        let first: Value = first.json().await.unwrap();
        let second = send(app, &app.key, &idem, Method::POST, "/applications", &body).await;
        assert_eq!(second.status(), 201);
        assert_eq!(second.headers()["content-type"], "application/json");
        let second: Value = second.json().await.unwrap();
        assert_eq!(
            second, first,
            "the replay is the same response, key included"
        );
        let list: Value = app
            .get("/applications?size=100")
            .await
            .json()
            .await
            .unwrap();
        let named: Vec<&Value> = list["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["name"] == body["name"])
            .collect();
        assert_eq!(named.len(), 1);
        // The same key with another body: 422, nothing created.
        let other =
            json!({"name": unique("app"), "type": "private", "permissions": ["token:read"]});
        let res = send(app, &app.key, &idem, Method::POST, "/applications", &other).await;
        let problem = assert_problem(res, 422).await;
        assert!(
            problem["errors"]["SVC-IDEMPOTENCY-KEY"].is_array(),
            "{problem}"
        );
        // Another application's same key is another request.
        let private = app.app("private", &["token:create"]).await;
        let pkey = private["key"].as_str().unwrap();
        let token = json!({"type": "token", "data": "one"});
        let a = send(app, pkey, &idem, Method::POST, "/tokens", &token).await;
        assert_eq!(a.status(), 201);
        let a: Value = a.json().await.unwrap();
        let b: Value = send(app, pkey, &idem, Method::POST, "/tokens", &token)
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(a["id"], b["id"]);
        // A failure is not stored: the same key may be retried and succeed.
        let retry = unique("retry");
        let bad = json!({"name": "", "type": "private"});
        assert_problem(
            send(app, &app.key, &retry, Method::POST, "/applications", &bad).await,
            400,
        )
        .await;
        assert_problem(
            send(app, &app.key, &retry, Method::POST, "/applications", &bad).await,
            400,
        )
        .await;
        // No key, GET: untouched.
        let res = app
            .request(Method::GET, "/applications")
            .header("SVC-IDEMPOTENCY-KEY", "x")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        // Answers that show what the caller may see *now* (detokenize, proxies, reactors) are
        // never stored: the key is ignored there.
        let reader = app.app("private", &["token:read"]).await;
        let rkey = reader["key"].as_str().unwrap();
        let once = unique("detok");
        for body in [json!({"a": "x"}), json!({"b": "y"})] {
            let res = send(app, rkey, &once, Method::POST, "/detokenize", &body).await;
            assert_eq!(res.status(), 200);
            assert_eq!(res.json::<Value>().await.unwrap(), body);
        }
        // A malformed key: 400 naming the header.
        let res = send(
            app,
            &app.key,
            &"k".repeat(256),
            Method::POST,
            "/applications",
            &body,
        )
        .await;
        let problem = assert_problem(res, 400).await;
        assert!(
            problem["errors"]["SVC-IDEMPOTENCY-KEY"].is_array(),
            "{problem}"
        );
    })
    .await;
}

#[tokio::test]
async fn concurrent_repeats_make_one_token() {
    on_each_backend(async |app| {
        let private = app.app("private", &["token:create", "token:read"]).await;
        let pkey = private["key"].as_str().unwrap().to_string();
        let idem = unique("race");
        let body = json!({"type": "token", "data": unique("v")});
        let sends = (0..8).map(|_| send(app, &pkey, &idem, Method::POST, "/tokens", &body));
        let answers = futures_util::future::join_all(sends).await;
        let mut ids = Vec::new();
        for res in answers {
            match res.status().as_u16() {
                201 => {
                    let v: Value = res.json().await.unwrap();
                    ids.push(v["id"].as_str().unwrap().to_string());
                }
                409 => {}
                other => panic!("unexpected {other}"),
            }
        }
        assert!(!ids.is_empty());
        ids.dedup();
        assert_eq!(ids.len(), 1, "never two tokens: {ids:?}");
    })
    .await;
}

/// Whatever the path's spelling, the routes that run every time (detokenize, react, every
/// proxy call) never store an answer nor replay one: decided by the route the router matched,
/// not by the path's text.
#[tokio::test]
async fn answers_of_live_routes_are_never_replayed_however_the_path_is_spelled() {
    let loopback = |config: &mut tokenvault_server::Config| {
        config.proxy.allow_http = true;
        config.proxy.allowed_hosts = vec!["127.0.0.1".into()];
    };
    tokenvault_tests::on_each_backend_with(loopback, async |app| {
        let reader = app.app("private", &["token:read", "token:use"]).await;
        let rkey = reader["key"].as_str().unwrap();
        for path in ["/detokenize", "/%64etokenize", "/detokeniz%65", "/%64%65tokenize"] {
            let idem = unique("detok");
            for body in [json!({"a": "x"}), json!({"b": "y"}), json!({"a": "x"})] {
                let res = send(app, rkey, &idem, Method::POST, path, &body).await;
                assert_eq!(res.status(), 200, "{path}");
                assert_eq!(res.json::<Value>().await.unwrap(), body, "{path}");
            }
        }
        // An encoded slash is no separator: not the detokenize route, and nothing stored.
        let idem = unique("detok");
        for body in [json!({"a": "x"}), json!({"b": "y"})] {
            let res = send(app, rkey, &idem, Method::POST, "/%2Fdetokenize", &body).await;
            assert_problem(res, 404).await;
        }
        // A search answers with the tokens as they are now: a token deleted since is not
        // handed out again from a stored answer (nor its read left out of the audit log).
        let searcher = app
            .app(
                "private",
                &["token:create", "token:search", "token:delete", "token:read"],
            )
            .await;
        let skey = searcher["key"].as_str().unwrap();
        for path in ["/tokens/search", "/tokens/%73earch"] {
            let token: Value = app
                .request_as(Some(skey), Method::POST, "/tokens")
                .json(&json!({"type": "token", "data": "searched"}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let tid = token["id"].as_str().unwrap();
            let body = json!({"query": format!("id:{tid}")});
            let idem = unique("search");
            let first = send(app, skey, &idem, Method::POST, path, &body).await;
            assert_eq!(first.status(), 200, "{path}");
            let first: Value = first.json().await.unwrap();
            assert_eq!(first["pagination"]["total_items"], 1, "{path}: {first}");
            let deleted = app
                .request_as(Some(skey), Method::DELETE, &format!("/tokens/{tid}"))
                .send()
                .await
                .unwrap();
            assert_eq!(deleted.status(), 204);
            let again = send(app, skey, &idem, Method::POST, path, &body).await;
            assert_eq!(again.status(), 200, "{path}");
            let again: Value = again.json().await.unwrap();
            assert_eq!(again["pagination"]["total_items"], 0, "{path} was replayed: {again}");
        }
        // React, spelled otherwise.
        let code = "module.exports = async function (req) { return { raw: req.args }; };";
        let formula: Value = app
            .post(
                "/reactor-formulas",
                &json!({"name": unique("f"), "code": code,
                        "request_parameters": [{"name": "n", "type": "string", "optional": true}]}),
            )
            .await
            .json()
            .await
            .unwrap();
        let reactor: Value = app
            .post(
                "/reactors",
                &json!({"name": unique("r"), "configuration": {}, "formula": {"id": formula["id"]}}),
            )
            .await
            .json()
            .await
            .unwrap();
        let id = reactor["id"].as_str().unwrap();
        for path in [
            format!("/reactors/{id}/react"),
            format!("/reactors/{id}/reac%74"),
            format!("/%72eactors/{id}/%72eact"),
        ] {
            let idem = unique("react");
            for n in ["one", "two", "one"] {
                let body = json!({"args": {"n": n}});
                let res = send(app, rkey, &idem, Method::POST, &path, &body).await;
                assert_eq!(res.status(), 200, "{path}");
                let out: Value = res.json().await.unwrap();
                assert_eq!(out["raw"], json!({"n": n}), "{path}");
            }
        }
        // Every proxy call reaches the destination, whatever the method or the spelling.
        let dest = tokenvault_tests::destination::Destination::start("127.0.0.1").await;
        let proxy: Value = app
            .post(
                "/proxies",
                &json!({"name": unique("p"), "destination_url": dest.url}),
            )
            .await
            .json()
            .await
            .unwrap();
        let pkey = proxy["key"].as_str().unwrap();
        let mut sent = 0;
        for (method, path) in [
            (Method::POST, "/proxy"),
            (Method::POST, "/%70roxy"),
            (Method::PUT, "/prox%79/x"),
            (Method::PATCH, "/%70roxy/a/b"),
        ] {
            let idem = unique("proxy");
            for _ in 0..2 {
                let res = app
                    .request_as(Some(rkey), method.clone(), path)
                    .header("SVC-PROXY-KEY", pkey)
                    .header("SVC-IDEMPOTENCY-KEY", &idem)
                    .json(&json!({"same": "body"}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(res.status(), 200, "{method} {path}");
                sent += 1;
                assert_eq!(dest.received().len(), sent, "{method} {path} was replayed");
            }
        }
    })
    .await;
}

/// A session's key is a bearer secret: `POST /sessions` is never stored nor replayed, so an
/// idempotency key someone guesses never hands over another browser's session.
#[tokio::test]
async fn session_keys_are_never_replayed() {
    on_each_backend(async |app| {
        let public = app.app("public", &["token:create"]).await;
        let pkey = public["key"].as_str().unwrap();
        for path in ["/sessions", "/%73essions", "/session%73"] {
            let idem = unique("session");
            let mut seen = Vec::new();
            for _ in 0..2 {
                let res = app
                    .request_as(Some(pkey), Method::POST, path)
                    .header("SVC-IDEMPOTENCY-KEY", &idem)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(res.status(), 201, "{path}");
                let body: Value = res.json().await.unwrap();
                assert!(body["session_key"].is_string(), "{path}: {body}");
                assert!(
                    !seen.contains(&body["session_key"]) && !seen.contains(&body["nonce"]),
                    "{path}: a session was replayed"
                );
                seen.push(body["session_key"].clone());
                seen.push(body["nonce"].clone());
            }
        }
    })
    .await;
}
