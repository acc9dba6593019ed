//! `SVC-API-KEY` authentication, permissions per endpoint, and tenant isolation.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::{assert_problem, on_each_backend, random_key, unique};

const MANAGEMENT: [&str; 17] = [
    "application:create",
    "application:read",
    "application:update",
    "application:delete",
    "proxy:create",
    "proxy:read",
    "proxy:update",
    "proxy:delete",
    "reactor:create",
    "reactor:read",
    "reactor:update",
    "reactor:delete",
    "tenant:read",
    "tenant:update",
    "tenant:delete",
    "report:read",
    "log:read",
];

#[tokio::test]
async fn missing_malformed_and_unknown_keys_are_401() {
    on_each_backend(async |app| {
        assert_eq!(
            app.request_as(None, Method::GET, "/health")
                .send()
                .await
                .unwrap()
                .status(),
            200
        );
        // A list query that is wrong too is still answered 401 first: the key before the query.
        for key in [None, Some("not-a-key"), Some(random_key().as_str())] {
            for path in [
                "/applications",
                "/tenants/self",
                "/applications/key",
                "/applications?id=x",
                "/proxies?size=0",
                "/reactors?id=x",
                "/reactor-formulas?page=-1",
            ] {
                let res = app.request_as(key, Method::GET, path).send().await.unwrap();
                let body = assert_problem(res, 401).await;
                if let Some(k) = key {
                    assert!(!body.to_string().contains(k), "the key is echoed");
                }
            }
        }
    })
    .await;
}

/// With a valid key, the same bad list queries are a 400 naming the parameter.
#[tokio::test]
async fn a_bad_list_query_with_a_key_names_its_parameter() {
    on_each_backend(async |app| {
        for (path, field) in [
            ("/applications?id=x", "id"),
            ("/proxies?size=0", "size"),
            ("/reactors?id=x", "id"),
            ("/reactor-formulas?page=-1", "page"),
        ] {
            let body = assert_problem(app.get(path).await, 400).await;
            assert!(body["errors"].get(field).is_some(), "{path}: {body}");
        }
    })
    .await;
}

#[tokio::test]
async fn each_endpoint_needs_its_permission() {
    on_each_backend(async |app| {
        let target = app.app("private", &["token:read"]).await;
        let id = target["id"].as_str().unwrap().to_string();
        let calls: Vec<(&str, Method, String, Option<Value>)> = vec![
            (
                "application:create",
                Method::POST,
                "/applications".into(),
                Some(json!({"name": "x", "type": "private", "permissions": ["token:read"]})),
            ),
            (
                "application:read",
                Method::GET,
                "/applications".into(),
                None,
            ),
            (
                "application:read",
                Method::GET,
                format!("/applications/{id}"),
                None,
            ),
            (
                "application:read",
                Method::GET,
                "/applications/key".into(),
                None,
            ),
            (
                "application:update",
                Method::PUT,
                format!("/applications/{id}"),
                Some(json!({"name": "stolen", "permissions": ["token:use"]})),
            ),
            (
                "application:update",
                Method::POST,
                format!("/applications/{id}/regenerate"),
                None,
            ),
            (
                "application:delete",
                Method::DELETE,
                format!("/applications/{id}"),
                None,
            ),
            ("tenant:read", Method::GET, "/tenants/self".into(), None),
            (
                "tenant:update",
                Method::PUT,
                "/tenants/self".into(),
                Some(json!({"name": "stolen"})),
            ),
            (
                "tenant:delete",
                Method::DELETE,
                "/tenants/self".into(),
                None,
            ),
        ];
        for (permission, method, path, body) in calls {
            let others: Vec<&str> = MANAGEMENT
                .iter()
                .copied()
                .filter(|p| *p != permission)
                .collect();
            let caller = app.app("management", &others).await;
            let key = caller["key"].as_str().unwrap();
            let mut req = app.request_as(Some(key), method.clone(), &path);
            if let Some(body) = &body {
                req = req.json(body);
            }
            let res = req.send().await.unwrap();
            assert_eq!(res.status(), 403, "{method} {path} without {permission}");
        }
        // Nothing changed.
        let after: Value = app
            .get(&format!("/applications/{id}"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(after["name"], target["name"]);
        assert_eq!(after["permissions"], json!(["token:read"]));
        assert_eq!(
            app.get("/tenants/self")
                .await
                .json::<Value>()
                .await
                .unwrap()["name"],
            "Default"
        );
        // The private key is still valid: 403 (lacks the permission), not 401.
        let private = app
            .request_as(target["key"].as_str(), Method::GET, "/applications")
            .send()
            .await
            .unwrap();
        assert_problem(private, 403).await;
    })
    .await;
}

#[tokio::test]
async fn another_tenants_resources_are_404_and_invisible() {
    on_each_backend(async |app| {
        let (_, other_key) = app.new_tenant(&unique("other")).await;
        let mine = app.app("private", &["token:read"]).await;
        let id = mine["id"].as_str().unwrap();
        let as_other =
            |method: Method, path: String| app.request_as(Some(&other_key), method, &path);

        assert_problem(
            as_other(Method::GET, format!("/applications/{id}"))
                .send()
                .await
                .unwrap(),
            404,
        )
        .await;
        assert_problem(
            as_other(Method::PUT, format!("/applications/{id}"))
                .json(&json!({"name": "x", "permissions": ["token:read"]}))
                .send()
                .await
                .unwrap(),
            404,
        )
        .await;
        assert_problem(
            as_other(Method::POST, format!("/applications/{id}/regenerate"))
                .send()
                .await
                .unwrap(),
            404,
        )
        .await;
        assert_problem(
            as_other(Method::DELETE, format!("/applications/{id}"))
                .send()
                .await
                .unwrap(),
            404,
        )
        .await;
        let listed: Value = as_other(Method::GET, format!("/applications?id={id}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(listed["pagination"]["total_items"], 0);
        let all: Value = as_other(Method::GET, "/applications".into())
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            all["pagination"]["total_items"], 1,
            "only its own management application"
        );

        // Still intact for its owner, key still working.
        let read: Value = app
            .get(&format!("/applications/{id}"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(read["name"], mine["name"]);
        let still = app
            .request_as(mine["key"].as_str(), Method::GET, "/tenants/self")
            .send()
            .await
            .unwrap();
        assert_problem(still, 403).await;
    })
    .await;
}
