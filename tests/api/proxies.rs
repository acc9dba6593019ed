//! Proxies over HTTP on each database, against a real destination on a loopback port: CRUD,
//! forwarding, auth, detokenization, transforms, the vault's own errors, and the SSRF guard.

use std::time::Duration;

use reqwest::{Method, Response};
use serde_json::{Value, json};
use tokenvault_server::Config;
use tokenvault_tests::destination::{Answer, Destination};
use tokenvault_tests::{
    TestApp, assert_invalid, assert_problem, on_each_backend_with, rule, unique,
};

use super::tokens::{Client, full, with};

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

#[tokio::test]
async fn proxies_are_managed_per_tenant_with_every_validation() {
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let created = simple(app, &dest.url).await;
        let key = created["key"].as_str().unwrap();
        assert_eq!(key.len(), 32);
        assert!(key.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(created["require_auth"], true);
        let id = created["id"].as_str().unwrap();
        let got: Value = app.get(&format!("/proxies/{id}")).await.json().await.unwrap();
        assert_eq!(got["key"], created["key"]);
        // Every field of the body is validated, each named.
        let res = app
            .post(
                "/proxies",
                &json!({"name": "", "destination_url": "ftp://x/y",
                        "configuration": {"n": 1}, "application": {"id": "nope"},
                        "request_transform": {}}),
            )
            .await;
        assert_invalid(
            res,
            &["name", "destination_url", "configuration.n", "application.id", "request_transform.code"],
        )
        .await;
        let too_many: serde_json::Map<String, Value> =
            (0..26).map(|i| (format!("k{i}"), json!("v"))).collect();
        let res = app
            .post("/proxies", &json!({"name": "p", "destination_url": dest.url, "configuration": too_many}))
            .await;
        assert_invalid(res, &["configuration"]).await;
        let long = format!("{}/{}", dest.url, "a".repeat(400));
        let res = app.post("/proxies", &json!({"name": "p", "destination_url": long})).await;
        assert_invalid(res, &["destination_url"]).await;
        let management = app.app("management", &["proxy:read"]).await;
        let res = app
            .post("/proxies", &json!({"name": "p", "destination_url": dest.url, "application": {"id": management["id"]}}))
            .await;
        assert_invalid(res, &["application.id"]).await;
        // Code is stored as given; a transform that does not compile is a 422 `proxy_error`
        // at invocation, and the destination sees nothing.
        let res = app
            .post("/proxies", &json!({"name": "p", "destination_url": dest.url,
                                      "request_transform": {"code": "module.exports = ("}}))
            .await;
        assert_eq!(res.status(), 201);
        let bad: Value = res.json().await.unwrap();
        let caller = with(app, &["token:use"], json!([])).await;
        let seen = dest.received().len();
        let res = invoke(app, Some(&caller.key), bad["key"].as_str().unwrap(), Method::POST, "", Some(&json!({}))).await;
        let problem = assert_proxy_error(res, 422).await;
        assert!(problem.to_string().contains("SyntaxError"), "{problem}");
        assert_eq!(dest.received().len(), seen, "the destination saw nothing");
        // List: filters by id and by name (contains, any case).
        let named = proxy(app, json!({"name": "Payments-Gateway", "destination_url": dest.url})).await;
        let list: Value = app.get("/proxies?name=gateway").await.json().await.unwrap();
        assert_eq!(list["pagination"]["total_items"], 1);
        assert_eq!(list["data"][0]["id"], named["id"]);
        let list: Value = app.get(&format!("/proxies?id={id}")).await.json().await.unwrap();
        assert_eq!(list["data"][0]["id"], created["id"]);
        // PUT replaces every field; the key stays.
        let res = app
            .put(&format!("/proxies/{id}"), &json!({"name": "renamed", "destination_url": format!("{}/v2", dest.url), "require_auth": false}))
            .await;
        assert_eq!(res.status(), 200);
        let updated: Value = res.json().await.unwrap();
        assert_eq!(updated["key"], created["key"]);
        assert_eq!(updated["require_auth"], false);
        assert_eq!(updated["destination_url"], format!("{}/v2", dest.url));
        // Another tenant sees nothing of it.
        let (_, other) = app.new_tenant("other").await;
        for method in [Method::GET, Method::DELETE] {
            let res = app.request_as(Some(&other), method, &format!("/proxies/{id}")).send().await.unwrap();
            assert_problem(res, 404).await;
        }
        // Reading needs proxy:read.
        let reader = app.app("management", &["reactor:read"]).await;
        let res = app.request_as(reader["key"].as_str(), Method::GET, "/proxies").send().await.unwrap();
        assert_problem(res, 403).await;
        // Deleted: gone, and its key selects nothing.
        assert_eq!(app.delete(&format!("/proxies/{id}")).await.status(), 204);
        assert_problem(app.get(&format!("/proxies/{id}")).await, 404).await;
        let caller = full(app).await;
        let res = invoke(app, Some(&caller.key), key, Method::POST, "", Some(&json!({}))).await;
        assert_proxy_error(res, 401).await;
        assert!(dest.received().is_empty());
        dest.assert_no_connection("a refused call").await;
    })
    .await;
}

#[tokio::test]
async fn requests_are_forwarded_as_sent_without_the_vaults_headers() {
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let p = simple(app, &format!("{}/base/", dest.url)).await;
        let key = p["key"].as_str().unwrap();
        let caller = with(app, &["token:use"], json!([])).await;
        let res = app
            .request_as(Some(&caller.key), Method::PUT, "/proxy/one/two?a=1&b=x%20y")
            .header("SVC-PROXY-KEY", key)
            .header("X-Custom", "kept")
            .header("SVC-Extra", "dropped")
            .json(&json!({"hello": "world"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()["svc-proxy-destination-status"], "200");
        assert_eq!(res.json::<Value>().await.unwrap(), json!({"ok": true}));
        let got = dest.last();
        assert_eq!(got.method, "PUT");
        assert_eq!(got.target, "/base/one/two?a=1&b=x%20y");
        assert_eq!(got.json(), json!({"hello": "world"}));
        assert_eq!(got.header("x-custom"), Some("kept"));
        assert!(
            got.headers.iter().all(|(n, _)| !n.starts_with("svc-")),
            "{:?}",
            got.headers
        );
        let raw = format!("{:?}", got.headers);
        assert!(!raw.contains(&caller.key) && !raw.contains(key));
        // The key may come in the query instead; it is not forwarded. Every method goes.
        for method in [Method::GET, Method::POST, Method::PATCH, Method::DELETE] {
            let res = app
                .request_as(
                    Some(&caller.key),
                    method.clone(),
                    &format!("/proxy?svc-proxy-key={key}&keep=1"),
                )
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200);
            let got = dest.last();
            assert_eq!(got.method, method.as_str());
            assert_eq!(got.target, "/base?keep=1");
        }
        // The destination's own errors come back as they are.
        dest.answer(Answer {
            status: 503,
            headers: vec![
                ("x-dest".into(), "yes".into()),
                ("svc-internal".into(), "no".into()),
            ],
            body: b"down for maintenance".to_vec(),
            ..Answer::default()
        });
        let res = invoke(app, Some(&caller.key), key, Method::GET, "", None).await;
        assert_eq!(res.status(), 503);
        assert_eq!(res.headers()["svc-proxy-destination-status"], "503");
        assert_eq!(res.headers()["x-dest"], "yes");
        assert!(res.headers().get("svc-internal").is_none());
        assert_eq!(res.text().await.unwrap(), "down for maintenance");
        let metrics = app.get("/metrics").await.text().await.unwrap();
        assert!(
            metrics.contains("tokenvault_proxy_calls_total{destination_status=\"503\"} 1"),
            "{metrics}"
        );
        assert!(
            metrics.contains("tokenvault_proxy_calls_total{destination_status=\"200\"} 5"),
            "{metrics}"
        );
    })
    .await;
}

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

#[tokio::test]
async fn bodies_are_detokenized_with_token_use_on_each_container() {
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let p = simple(app, &dest.url).await;
        let key = p["key"].as_str().unwrap();
        let owner = full(app).await;
        let secret = token(&owner, json!({"type": "token", "data": "s3cret", "containers": ["/open/"]})).await;
        let card = token(
            &owner,
            json!({"type": "card", "containers": ["/open/"],
                   "data": {"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2030}}),
        )
        .await;
        let hidden = token(&owner, json!({"type": "token", "data": "vault-only", "containers": ["/hidden/"]})).await;
        // token:use on /open/ only, through a rule.
        let caller = with(app, &[], json!([rule(1, "/open/", "reveal", &["token:use"])])).await;
        let body = json!({"plain": "p", "value": format!("{{{{ {secret} }}}}"),
                          "number": format!("{{{{ {card} | json: '$.number' }}}}"),
                          "month": format!("{{{{ {card} | json: '$.expiration_month' }}}}"),
                          "text": format!("card {{{{{card}|json: '$.expiration_year'}}}}"),
                          "upper": format!("{{{{ {secret} | upcase }}}}")});
        let res = invoke(app, Some(&caller.key), key, Method::POST, "", Some(&body)).await;
        assert_eq!(res.status(), 200);
        assert_eq!(
            dest.last().json(),
            json!({"plain": "p", "value": "s3cret", "number": "4242424242424242", "month": 12,
                   "text": "card 2030", "upper": "S3CRET"})
        );
        // A body without expressions goes out byte for byte (key order, spacing, binary).
        for raw in [&b"{\"b\": 1,  \"a\": 2}"[..], &[0xff, 0x00, 0x7b, 0x7b][..]] {
            let res = app
                .request_as(Some(&caller.key), Method::POST, "/proxy")
                .header("SVC-PROXY-KEY", key)
                .header("Content-Type", "application/json")
                .body(raw.to_vec())
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200);
            assert_eq!(dest.last().body, raw);
        }
        // A token in a container the caller may not use: nothing is sent.
        let before = dest.received().len();
        let body = json!({"v": format!("{{{{ {hidden} }}}}")});
        assert_proxy_error(invoke(app, Some(&caller.key), key, Method::POST, "", Some(&body)).await, 403).await;
        // An unknown token: 400 naming the body.
        let body = json!({"v": "{{ 0123456789abcdef }}"});
        let problem = assert_proxy_error(invoke(app, Some(&caller.key), key, Method::POST, "", Some(&body)).await, 400).await;
        assert!(problem["errors"]["body"].is_array(), "{problem}");
        assert_eq!(dest.received().len(), before);
        // Without require_auth: anyone with the key; detokenization acts as the proxy's
        // application, and without one expressions go as they are.
        let open = proxy(app, json!({"name": "open", "destination_url": dest.url, "require_auth": false})).await;
        let body = json!({"v": format!("{{{{ {secret} }}}}")});
        let res = invoke(app, None, open["key"].as_str().unwrap(), Method::POST, "", Some(&body)).await;
        assert_eq!(res.status(), 200);
        assert_eq!(dest.last().json(), body);
        let acting = app.app("private", &["token:use"]).await;
        let as_app = proxy(
            app,
            json!({"name": "as-app", "destination_url": dest.url, "require_auth": false, "application": {"id": acting["id"]}}),
        )
        .await;
        let res = invoke(app, None, as_app["key"].as_str().unwrap(), Method::POST, "", Some(&body)).await;
        assert_eq!(res.status(), 200);
        assert_eq!(dest.last().json(), json!({"v": "s3cret"}));
    })
    .await;
}

#[tokio::test]
async fn tokens_named_in_the_body_stay_unseen_until_the_caller_may_use_them() {
    // A proxy reads its caller's key beside the proxy, and the tokens a body names beside the
    // proxy's application: whatever the key, the answer is the one it got when each read
    // waited for the one before, and nothing goes out before it is allowed.
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let p = simple(app, &dest.url).await;
        let key = p["key"].as_str().unwrap();
        let owner = full(app).await;
        let mut open = Vec::new();
        for i in 0..12 {
            let id = token(
                &owner,
                json!({"type": "token", "data": format!("v{i}"), "containers": ["/open/"]}),
            )
            .await;
            open.push(id);
        }
        let body = json!({"v": format!("{{{{ {} }}}}", open[0])});
        assert_proxy_error(
            invoke(app, None, key, Method::POST, "", Some(&body)).await,
            401,
        )
        .await;
        let stranger = stranger(app).await;
        let res = invoke(app, Some(&stranger), key, Method::POST, "", Some(&body)).await;
        assert_proxy_error(res, 401).await;
        let reader = with(app, &["token:read"], json!([])).await;
        let res = invoke(app, Some(&reader.key), key, Method::POST, "", Some(&body)).await;
        assert_proxy_error(res, 403).await;
        let elsewhere = with(
            app,
            &[],
            json!([rule(1, "/hidden/", "reveal", &["token:use"])]),
        )
        .await;
        let res = invoke(
            app,
            Some(&elsewhere.key),
            key,
            Method::POST,
            "",
            Some(&body),
        )
        .await;
        assert_proxy_error(res, 403).await;
        assert!(dest.received().is_empty());
        dest.assert_no_connection("a refused call").await;

        // Allowed: a few tokens, and more than are read ahead, are replaced alike; an unknown
        // one among known ones is still named.
        let caller = with(
            app,
            &[],
            json!([rule(1, "/open/", "reveal", &["token:use"])]),
        )
        .await;
        for n in [2, 12] {
            let body: serde_json::Map<String, Value> = open[..n]
                .iter()
                .enumerate()
                .map(|(i, id)| (format!("k{i}"), json!(format!("{{{{ {id} }}}}"))))
                .collect();
            let res = invoke(
                app,
                Some(&caller.key),
                key,
                Method::POST,
                "",
                Some(&Value::Object(body)),
            )
            .await;
            assert_eq!(res.status(), 200);
            let sent = dest.last().json();
            for i in 0..n {
                assert_eq!(sent[format!("k{i}")], json!(format!("v{i}")), "{n} tokens");
            }
        }
        let body = json!({"a": format!("{{{{ {} }}}}", open[1]), "b": "{{ 0123456789abcdef }}"});
        let problem = assert_proxy_error(
            invoke(app, Some(&caller.key), key, Method::POST, "", Some(&body)).await,
            400,
        )
        .await;
        assert!(problem["errors"]["body"].is_array(), "{problem}");
        assert_eq!(dest.received().len(), 2);
    })
    .await;
}

#[tokio::test]
async fn transforms_rewrite_the_request_and_2xx_responses_only() {
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let request = "module.exports = async (req) => ({ body: { wrapped: req.args.body, method: req.args.method, \
                       path: req.args.path, query: req.args.query, conf: req.configuration, svc: req.svc === null }, \
                       headers: { 'content-type': 'application/json', 'x-transformed': 'yes', 'svc-api-key': 'leak' } });";
        let response = "module.exports = async (req) => ({ status: 201, body: { n: req.args.body.n + 1, seen: req.args.status }, \
                        headers: { 'content-type': 'application/json' } });";
        let p = proxy(
            app,
            json!({"name": "t", "destination_url": dest.url, "configuration": {"greeting": "hello"},
                   "request_transform": {"code": request}, "response_transform": {"code": response}}),
        )
        .await;
        let key = p["key"].as_str().unwrap();
        let caller = with(app, &["token:use"], json!([])).await;
        dest.answer(Answer {
            body: br#"{"n":41}"#.to_vec(),
            ..Answer::default()
        });
        let res = app
            .request_as(Some(&caller.key), Method::POST, "/proxy/in?q=1")
            .header("SVC-PROXY-KEY", key)
            .json(&json!({"a": 1}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
        assert_eq!(res.headers()["svc-proxy-destination-status"], "200");
        assert_eq!(res.json::<Value>().await.unwrap(), json!({"n": 42, "seen": 200}));
        let got = dest.last();
        assert_eq!(
            got.json(),
            json!({"wrapped": {"a": 1}, "method": "POST", "path": "in", "query": {"q": "1"},
                   "conf": {"greeting": "hello"}, "svc": true})
        );
        assert_eq!(got.header("x-transformed"), Some("yes"));
        assert_eq!(got.header("svc-api-key"), None);
        // A 4xx is not transformed.
        dest.answer(Answer {
            status: 404,
            body: b"missing".to_vec(),
            ..Answer::default()
        });
        let res = invoke(app, Some(&caller.key), key, Method::POST, "", Some(&json!({}))).await;
        assert_eq!(res.status(), 404);
        assert_eq!(res.text().await.unwrap(), "missing");
        // A transform's error is the vault's: proxy_error with its status.
        let failing = proxy(
            app,
            json!({"name": "f", "destination_url": dest.url,
                   "request_transform": {"code": "module.exports = async () => { throw new BadRequestError('no card'); };"}}),
        )
        .await;
        let before = dest.received().len();
        let res = invoke(app, Some(&caller.key), failing["key"].as_str().unwrap(), Method::POST, "", Some(&json!({}))).await;
        let problem = assert_proxy_error(res, 400).await;
        assert_eq!(problem["detail"], "no card");
        assert_eq!(dest.received().len(), before);
        // The code runtime's calls are counted by outcome: request and response transforms of
        // the first call, the request transform of the 404 call; the failing one threw.
        let metrics = app.get("/metrics").await.text().await.unwrap();
        assert!(metrics.contains("tokenvault_code_calls_total{outcome=\"ok\"} 3"), "{metrics}");
        assert!(metrics.contains("tokenvault_code_calls_total{outcome=\"error\"} 1"), "{metrics}");
    })
    .await;
}

#[tokio::test]
async fn a_slow_or_missing_destination_is_a_proxy_error() {
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        dest.answer(Answer {
            delay: Duration::from_secs(3),
            ..Answer::default()
        });
        let caller = with(app, &["token:use"], json!([])).await;
        let slow = simple(app, &dest.url).await;
        let res = invoke(
            app,
            Some(&caller.key),
            slow["key"].as_str().unwrap(),
            Method::GET,
            "",
            None,
        )
        .await;
        assert_proxy_error(res, 504).await;
        // A port nobody listens on.
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let gone = simple(app, &format!("http://127.0.0.1:{closed}")).await;
        let res = invoke(
            app,
            Some(&caller.key),
            gone["key"].as_str().unwrap(),
            Method::GET,
            "",
            None,
        )
        .await;
        assert_proxy_error(res, 502).await;
    })
    .await;
}

#[tokio::test]
async fn destinations_that_are_not_public_are_refused_unless_allowed() {
    // Only 127.0.0.1 is allowed: other loopback spellings and names resolving to it are not.
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let port = dest.url.rsplit(':').next().unwrap().to_string();
        for url in [
            format!("http://127.0.0.2:{port}"),
            format!("http://2130706434:{port}"),
            format!("http://[::1]:{port}"),
            format!("http://169.254.169.254:{port}"),
            format!("http://10.0.0.1:{port}"),
        ] {
            let res = app
                .post("/proxies", &json!({"name": "ssrf", "destination_url": url}))
                .await;
            assert_invalid(res, &["destination_url"]).await;
        }
        // A name is checked when it is resolved, at every call: refused, nothing sent.
        let by_name = simple(app, &format!("http://localhost:{port}")).await;
        let caller = with(app, &["token:use"], json!([])).await;
        let res = invoke(
            app,
            Some(&caller.key),
            by_name["key"].as_str().unwrap(),
            Method::GET,
            "",
            None,
        )
        .await;
        assert_proxy_error(res, 403).await;
        assert!(dest.received().is_empty());
        dest.assert_no_connection("a refused call").await;
    })
    .await;
    // By default only https to public addresses.
    on_each_backend_with(
        |_| {},
        async |app| {
            let res = app
                .post(
                    "/proxies",
                    &json!({"name": "http", "destination_url": "http://example.com/"}),
                )
                .await;
            assert_invalid(res, &["destination_url"]).await;
            let res = app
                .post(
                    "/proxies",
                    &json!({"name": "loop", "destination_url": "https://127.0.0.1/"}),
                )
                .await;
            assert_invalid(res, &["destination_url"]).await;
        },
    )
    .await;
}

/// Sends `GET /proxy` on a raw connection and resets it `after` later, while the destination
/// has not answered yet.
async fn get_and_leave(app: &TestApp, dest: &Destination, api_key: &str, proxy_key: &str) {
    use tokio::io::AsyncWriteExt;
    let addr = app.base.trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let request = format!(
        "GET /proxy/left HTTP/1.1\r\nHost: {addr}\r\nSVC-API-KEY: {api_key}\r\n\
         SVC-PROXY-KEY: {proxy_key}\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    // Leave only once the call is in flight (the destination has it and holds its answer),
    // however slowly a loaded machine gets there.
    let waiting = std::time::Instant::now();
    while dest.received().is_empty() {
        assert!(
            waiting.elapsed() < Duration::from_secs(20),
            "the call never reached the destination"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Linger zero: the close is a reset, which actix sees as the client gone.
    stream.set_zero_linger().unwrap();
    drop(stream);
}

/// The proxy invocations in the tenant's audit log.
async fn invocations(app: &TestApp, proxy_id: &str) -> usize {
    let res = app
        .get(&format!(
            "/logs?size=100&entity_type=proxy&entity_id={proxy_id}"
        ))
        .await;
    assert_eq!(res.status(), 200);
    let page: Value = res.json().await.unwrap();
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["operation"] == "invoke")
        .count()
}

/// A proxy call detokenizes data to its destination whatever its method: a `GET` whose client
/// leaves while the destination answers runs to completion, audit entry included.
#[tokio::test]
async fn a_proxy_get_whose_client_leaves_still_completes() {
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        dest.answer(Answer {
            delay: Duration::from_millis(600),
            ..Answer::default()
        });
        let caller = with(app, &["token:use"], json!([])).await;
        let p = simple(app, &dest.url).await;
        let id = p["id"].as_str().unwrap();
        get_and_leave(app, &dest, &caller.key, p["key"].as_str().unwrap()).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(dest.received().len(), 1);
        assert_eq!(
            invocations(app, id).await,
            1,
            "the call was cut with its client"
        );
    })
    .await;
}

/// Shutdown waits for a call whose client left (it holds no connection, so graceful stop
/// alone would drop it with the worker): its audit entry is written before the server stops.
#[tokio::test]
async fn shutdown_waits_for_a_proxy_call_whose_client_left() {
    for backend in tokenvault_persistence::testing::backends() {
        let mut app = TestApp::spawn_with(backend, loopback).await;
        let dest = Destination::start("127.0.0.1").await;
        dest.answer(Answer {
            delay: Duration::from_millis(600),
            ..Answer::default()
        });
        let caller_key = with(&app, &["token:use"], json!([])).await.key;
        let p = simple(&app, &dest.url).await;
        let id = p["id"].as_str().unwrap().to_string();
        get_and_leave(&app, &dest, &caller_key, p["key"].as_str().unwrap()).await;
        let started = std::time::Instant::now();
        app.restart().await;
        assert_eq!(dest.received().len(), 1);
        assert_eq!(
            invocations(&app, &id).await,
            1,
            "the call was cut by the shutdown (stopped after {:?})",
            started.elapsed()
        );
        app.stop().await;
    }
}

/// A proxy call waits for room in its proxy's tenant's audit log as any request does (decisions
/// §11): with every tenant's log behind (the mark at 0) it is refused with a 503 proxy error and
/// `Retry-After`, and nothing is sent.
#[tokio::test]
async fn a_proxy_call_whose_tenants_audit_log_stays_behind_gets_503_and_sends_nothing() {
    for backend in tokenvault_persistence::testing::backends() {
        let mut app = TestApp::spawn_with(backend, loopback).await;
        let dest = Destination::start("127.0.0.1").await;
        let open = proxy(
            &app,
            json!({"name": "open", "destination_url": dest.url, "require_auth": false}),
        )
        .await;
        app.restart_with(|c| c.audit_high_water = 0).await;
        let key = open["key"].as_str().unwrap();
        let res = invoke(&app, None, key, Method::POST, "", Some(&json!({"v": 1}))).await;
        assert_eq!(res.headers()["retry-after"], "1");
        assert_proxy_error(res, 503).await;
        assert!(dest.received().is_empty(), "nothing was sent");
        dest.assert_no_connection("a refused call").await;
        app.stop().await;
    }
}

/// The code of a transform runs with the proxy's application's rights: setting it on a proxy
/// with an application needs the right to lend that application (decisions §9).
#[tokio::test]
async fn transforms_of_a_proxy_with_an_application_need_the_right_to_lend() {
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let lender = app.app("private", &["token:use", "token:read"]).await;
        let created = proxy(
            app,
            json!({"name": "lent", "destination_url": dest.url, "application": {"id": lender["id"]}}),
        )
        .await;
        let id = created["id"].as_str().unwrap();
        let limited = app
            .app("management", &["proxy:create", "proxy:read", "proxy:update"])
            .await;
        let code = "module.exports = async (req) => ({ body: req.args.body, headers: {} });";
        for transforms in [
            json!({"request_transform": {"code": code}}),
            json!({"response_transform": {"code": code}}),
        ] {
            let mut body = json!({"name": "lent", "destination_url": dest.url,
                                  "application": {"id": lender["id"]}});
            body.as_object_mut()
                .unwrap()
                .extend(transforms.as_object().unwrap().clone());
            let res = app
                .request_as(limited["key"].as_str(), Method::PUT, &format!("/proxies/{id}"))
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_problem(res, 403).await;
            let res = app
                .request_as(limited["key"].as_str(), Method::POST, "/proxies")
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_problem(res, 403).await;
        }
        let got: Value = app.get(&format!("/proxies/{id}")).await.json().await.unwrap();
        assert!(got["request_transform"].is_null(), "{got}");
        assert_eq!(got["application_id"], lender["id"]);
        // Without the application, the transform is proxy:update's to set: the application
        // goes (a PUT replaces every field).
        let res = app
            .request_as(limited["key"].as_str(), Method::PUT, &format!("/proxies/{id}"))
            .json(&json!({"name": "lent", "destination_url": dest.url,
                          "request_transform": {"code": code}}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let got: Value = res.json().await.unwrap();
        assert!(got["application_id"].is_null(), "{got}");
        // Whoever may lend it may set both.
        let res = app
            .put(
                &format!("/proxies/{id}"),
                &json!({"name": "lent", "destination_url": dest.url,
                        "application": {"id": lender["id"]}, "request_transform": {"code": code}}),
            )
            .await;
        assert_eq!(res.status(), 200);
    })
    .await;
}
/// The tail never climbs above the destination's path (decisions §8): not through a control
/// character the URL parser drops inside `..` (tab, CR, LF, in any case of their escapes), not
/// through an encoded dot, backslash or slash. Each is a 400 naming `path`, as a
/// `proxy_error`, and the destination never hears of it.
#[tokio::test]
async fn the_tail_stays_below_the_destination_however_spelled() {
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let created = simple(app, &format!("{}/api/v1/tenant-a", dest.url)).await;
        let key = created["key"].as_str().unwrap();
        let caller = with(app, &["token:use"], json!([])).await;
        for tail in [
            "/.%09./.%09./admin",
            "/.%0D./",
            "/.%0D./.%0D./admin",
            "/.%0A./admin",
            "/.%0a./admin",
            "/.%0d./admin",
            "/%2e%2e/admin",
            "/.%2E/admin",
            "/%2E./admin",
            "/%2E%09./admin",
            "/%09%2e%2e%09/admin",
            "/x/%2e%2e/%2e%2e/%2e%2e/admin",
            "/.%00./admin",
            "/.%7F./admin",
            "/a%09b",
            "/%2e",
            "/..%5Cadmin",
            "/..%5cadmin",
            "/..\\admin",
            "/.%09.\\admin",
            "/%5C..%5C..%5Cadmin",
            "/.%09.%5Cadmin",
            "/..%2Fadmin",
            "/..%2f..%2fadmin",
            "/a%2F..%2F..%2F..%2Fadmin",
            "/.%2F.%2E%2Fadmin",
        ] {
            let (status, body) = raw_get(app, &format!("/proxy{tail}"), &caller.key, key).await;
            assert_eq!(status, 400, "{tail}: {body}");
            let body: Value = serde_json::from_str(&body).unwrap();
            assert!(
                body["proxy_error"]["errors"]["path"].is_array(),
                "{tail}: {body}"
            );
        }
        let reached: Vec<String> = dest.received().into_iter().map(|r| r.target).collect();
        assert!(reached.is_empty(), "{reached:?}");
        // What stays below goes there, an encoded slash inside a segment kept as one.
        for (tail, target) in [
            ("/ok/path", "/api/v1/tenant-a/ok/path"),
            ("/a%2Fb", "/api/v1/tenant-a/a%2Fb"),
            ("/..a/b..", "/api/v1/tenant-a/..a/b.."),
            ("/a%20b/", "/api/v1/tenant-a/a%20b/"),
        ] {
            let (status, body) = raw_get(app, &format!("/proxy{tail}"), &caller.key, key).await;
            assert_eq!(status, 200, "{tail}: {body}");
            assert_eq!(dest.last().target, target, "{tail}");
        }
    })
    .await;
}
