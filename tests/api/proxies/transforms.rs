//! Request and response transforms: what they rewrite, their errors as proxy errors, and the
//! right to lend a proxy's application needed to set them.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::destination::{Answer, Destination};
use tokenvault_tests::{assert_problem, on_each_backend_with};

use super::{assert_proxy_error, invoke, loopback, proxy};
use crate::tokens::with;

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
