//! Managing proxies per tenant: create, read, list, replace and delete, with every validation.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::destination::Destination;
use tokenvault_tests::{assert_invalid, assert_problem, on_each_backend_with};

use super::{assert_proxy_error, invoke, loopback, proxy, simple};
use crate::tokens::{full, with};

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
