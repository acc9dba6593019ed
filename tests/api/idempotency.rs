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
