//! The review's attacks on the access rules, each tried against the real server on every
//! database and each required to fail (docs/decisions.md §4 granting, §6 tokens).

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::{TestApp, assert_invalid, assert_problem, on_each_backend, rule, unique};

use super::tokens::{Client, full, with};

const CARD: &str = "4242424242424242";

fn card() -> Value {
    json!({"type": "card_number", "data": CARD})
}

async fn management(app: &TestApp, permissions: &[&str]) -> String {
    app.app("management", permissions).await["key"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn healthy(app: &TestApp) {
    let res = app
        .request_as(None, Method::GET, "/health")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "the server is still up");
}

#[tokio::test]
async fn no_application_grants_what_it_does_not_hold() {
    on_each_backend(async |app| {
        let creator = management(app, &["application:create", "application:read"]).await;
        let as_creator = |body: Value| {
            app.request_as(Some(&creator), Method::POST, "/applications")
                .json(&body)
                .send()
        };
        // A management application with permissions the creator lacks: refused.
        let res = as_creator(json!({"name": unique("m"), "type": "management",
            "permissions": ["tenant:delete", "application:update"]}))
        .await
        .unwrap();
        assert_problem(res, 403).await;
        // What it holds itself it may give.
        let res = as_creator(json!({"name": unique("m"), "type": "management",
            "permissions": ["application:read"]}))
        .await
        .unwrap();
        assert_eq!(res.status(), 201);
        // Token permissions and rules are given by any holder of application:create.
        let res = as_creator(json!({"name": unique("p"), "type": "private",
            "rules": [rule(1, "/", "reveal", &["token:read"])]}))
        .await
        .unwrap();
        assert_eq!(res.status(), 201);

        // application:update cannot raise its own permissions, nor give others more than it has.
        let updater = app
            .app("management", &["application:update", "application:read"])
            .await;
        let key = updater["key"].as_str().unwrap();
        let own = format!("/applications/{}", updater["id"].as_str().unwrap());
        let raise = app
            .request_as(Some(key), Method::PUT, &own)
            .json(&json!({"name": "me", "permissions": ["application:update", "application:read", "tenant:delete"]}))
            .send()
            .await
            .unwrap();
        assert_problem(raise, 403).await;
        let other = app.app("management", &["report:read"]).await;
        let other_path = format!("/applications/{}", other["id"].as_str().unwrap());
        let grant = app
            .request_as(Some(key), Method::PUT, &other_path)
            .json(&json!({"name": "o", "permissions": ["tenant:update"]}))
            .send()
            .await
            .unwrap();
        assert_problem(grant, 403).await;
        // Nothing changed.
        let stored: Value = app.get(&other_path).await.json().await.unwrap();
        assert_eq!(stored["permissions"], json!(["report:read"]));
        let stored: Value = app.get(&own).await.json().await.unwrap();
        assert_eq!(stored["permissions"], json!(["application:update", "application:read"]));
        // Nor act on a stronger application: a new key would be its rights in the caller's hands.
        let boot: Value = app.get("/applications/key").await.json().await.unwrap();
        let boot_path = format!("/applications/{}", boot["id"].as_str().unwrap());
        for (method, path) in [
            (Method::POST, format!("{boot_path}/regenerate")),
            (Method::DELETE, boot_path.clone()),
        ] {
            let res = app.request_as(Some(key), method, &path).send().await.unwrap();
            assert_problem(res, 403).await;
        }
        let res = app
            .request_as(Some(key), Method::PUT, &boot_path)
            .json(&json!({"name": "mine now", "permissions": ["application:update"]}))
            .send()
            .await
            .unwrap();
        assert_problem(res, 403).await;
        assert_eq!(app.get("/tenants/self").await.status(), 200, "the bootstrap key still works");
        // Lowering its own permissions is fine.
        let lower = app
            .request_as(Some(key), Method::PUT, &own)
            .json(&json!({"name": "me", "permissions": ["application:update"]}))
            .send()
            .await
            .unwrap();
        assert_eq!(lower.status(), 200);
    })
    .await;
}

#[tokio::test]
async fn token_update_cannot_change_what_a_token_discloses_without_reveal() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let t = owner.create(&card()).await;
        let id = t["id"].as_str().unwrap();
        let path = format!("/tokens/{id}");
        // Plain token:read (masked) and token:update, plus reveal somewhere else.
        let attacker = with(
            app,
            &["token:read", "token:update"],
            json!([rule(
                1,
                "/exposed/",
                "reveal",
                &["token:read", "token:update"]
            )]),
        )
        .await;
        for body in [
            json!({"mask": "{{ data }}"}),
            json!({"fingerprint_expression": "{{ data | slice: 0, 1 }}"}),
            json!({"containers": ["/exposed/"]}),
        ] {
            assert_problem(attacker.patch(&path, &body).await, 403).await;
        }
        let seen = attacker.read(id).await;
        assert_eq!(seen["data"], "XXXXXXXXXXXX4242", "still masked");
        assert!(seen.get("fingerprint").is_none_or(Value::is_null));
        assert_eq!(owner.read(id).await["containers"], json!(["/pci/high/"]));
        // A public key (token:update only) cannot plant an oracle either.
        let public = app
            .create_app(&json!({"name": unique("pub"), "type": "public",
                "permissions": ["token:create", "token:update"]}))
            .await;
        let public = Client {
            app,
            key: public["key"].as_str().unwrap().to_string(),
        };
        let res = public
            .patch(
                &path,
                &json!({"fingerprint_expression": "{{ data | slice: 0, 2 }}"}),
            )
            .await;
        assert_problem(res, 403).await;
        // Metadata and data changes stay open to token:update, and a caller who can see the
        // value may change its mask.
        assert_eq!(
            attacker
                .patch(&path, &json!({"metadata": {"k": "v"}}))
                .await
                .status(),
            200
        );
        let res = owner
            .patch(&path, &json!({"mask": "{{ data | last4 }}"}))
            .await;
        assert_eq!(res.status(), 200);
        assert_eq!(attacker.read(id).await["data"], "4242");
        // Responses carry the token's own expressions (never data).
        assert_eq!(owner.read(id).await["mask"], "{{ data | last4 }}");
    })
    .await;
}

#[tokio::test]
async fn the_patch_response_shows_data_under_the_update_transform() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let t = owner.create(&card()).await;
        let path = format!("/tokens/{}", t["id"].as_str().unwrap());
        let split = with(
            app,
            &[],
            json!([
                rule(1, "/pci/", "mask", &["token:update"]),
                rule(2, "/pci/", "reveal", &["token:read"])
            ]),
        )
        .await;
        let res = split.patch(&path, &json!({"metadata": {"a": "b"}})).await;
        assert_eq!(res.status(), 200);
        let body: Value = res.json().await.unwrap();
        assert_eq!(
            body["data"], "XXXXXXXXXXXX4242",
            "masked: the update rule decides"
        );
    })
    .await;
}

#[tokio::test]
async fn deduplication_stays_in_its_container_and_cannot_be_planted() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let high = owner
            .create(
                &json!({"type": "card_number", "data": CARD, "deduplicate_token": true,
                "metadata": {"owner": "high"}}),
            )
            .await;
        let low = app
            .create_app(&json!({"name": unique("low"), "type": "public",
                "rules": [rule(1, "/pci/low/", "mask", &["token:create"])]}))
            .await;
        let low = Client {
            app,
            key: low["key"].as_str().unwrap().to_string(),
        };
        let res = low
            .post(
                "/tokens",
                &json!({"type": "card_number", "data": CARD,
                "containers": ["/pci/low/"], "deduplicate_token": true}),
            )
            .await;
        assert_eq!(res.status(), 201, "a new token, not the /pci/high/ one");
        let mine: Value = res.json().await.unwrap();
        assert_ne!(mine["id"], high["id"]);
        assert!(mine["metadata"].get("owner").is_none());
        // Within its container the same value is deduplicated (200, same token).
        let again = low
            .post(
                "/tokens",
                &json!({"type": "card_number", "data": CARD,
                "containers": ["/pci/low/"], "deduplicate_token": true}),
            )
            .await;
        assert_eq!(again.status(), 200);
        assert_eq!(again.json::<Value>().await.unwrap()["id"], mine["id"]);
        // Creating a child that deduplicates to a token the caller cannot read does not link it.
        let creator = with(
            app,
            &[],
            json!([
                rule(1, "/general/", "reveal", &["token:read", "token:create"]),
                rule(2, "/pci/high/", "reveal", &["token:create"])
            ]),
        )
        .await;
        let parent = creator
            .create(&json!({"type": "token", "data": "parent"}))
            .await;
        let res = creator
            .post(
                &format!("/tokens/{}/children", parent["id"].as_str().unwrap()),
                &json!({"type": "card_number", "data": CARD, "deduplicate_token": true}),
            )
            .await;
        assert_problem(res, 403).await;
        let children: Value = owner
            .get(&format!(
                "/tokens/{}/children",
                parent["id"].as_str().unwrap()
            ))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(children["pagination"]["total_items"], 0);

        // Planting: data X with a constant expression equal to the victim's value.
        let planted = owner
            .create(
                &json!({"type": "token", "data": "attacker", "deduplicate_token": true,
                "fingerprint_expression": "victim value"}),
            )
            .await;
        let res = owner
            .post(
                "/tokens",
                &json!({"type": "token", "data": "victim value", "deduplicate_token": true}),
            )
            .await;
        assert_eq!(res.status(), 201, "never the planted token");
        let victim: Value = res.json().await.unwrap();
        assert_ne!(victim["id"], planted["id"]);
    })
    .await;
}

#[tokio::test]
async fn expression_bombs_are_refused_and_the_server_stays_up() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let big = "7".repeat(500_000);
        for body in [
            json!({"type": "token", "data": big, "mask": "{{ data | reveal_last: 0, data }}"}),
            json!({"type": "token", "data": big, "fingerprint_expression": "{{ data | reveal_last: 0, data }}"}),
            json!({"type": "token", "data": big, "fingerprint_expression": "{{ data | replace: '', data }}"}),
            json!({"type": "token", "data": big, "id": "{{ data | replace: '', data }}"}),
            json!({"type": "token", "data": "x", "mask": "{{ data | pad_left: 9, 'ab' }}"}),
        ] {
            let field = ["mask", "fingerprint_expression", "id"]
                .into_iter()
                .find(|f| body.get(*f).is_some())
                .unwrap();
            assert_invalid(owner.post("/tokens", &body).await, &[field]).await;
        }
        // Literal arguments still grow: capped at 1 MiB, a 400 and not a crash.
        let four_k = "y".repeat(4000);
        let body = json!({"type": "token", "data": big,
            "fingerprint_expression": format!("{{{{ data | replace: '', '{four_k}' }}}}")});
        assert_invalid(owner.post("/tokens", &body).await, &["fingerprint_expression"]).await;
        // PATCH is checked the same way, length included.
        let t = owner.create(&json!({"type": "token", "data": big})).await;
        let path = format!("/tokens/{}", t["id"].as_str().unwrap());
        let res = owner.patch(&path, &json!({"fingerprint_expression": "x".repeat(5000)})).await;
        assert_invalid(res, &["fingerprint_expression"]).await;
        let res = owner.patch(&path, &json!({"mask": "{{ data | append: data }}"})).await;
        assert_invalid(res, &["mask"]).await;
        // A literal can still ask for a lot: a date width, a JSONPath that selects a node many
        // times, an integer division that overflows.
        for (field, expr) in [
            ("fingerprint_expression", "{{ 'now' | date: '%99999999999T' }}"),
            ("mask", "{{ data | json: '$..*..*..*' }}"),
            ("mask", "{{ data | json: '$[*,*,*,*]' }}"),
            ("id", "{{ -9223372036854775808 | divided_by: -1 }}"),
        ] {
            let body = json!({"type": "token", "data": [[[1]]], field: expr});
            let res = owner.post("/tokens", &body).await;
            assert!(res.status() == 400, "{expr}: {}", res.status());
        }
        let leaves: serde_json::Map<String, Value> =
            (0..33).map(|i| (format!("k{i}"), json!("{{ data }}"))).collect();
        let res = owner.post("/tokens", &json!({"type": "token", "data": "x", "mask": leaves})).await;
        assert_invalid(res, &["mask"]).await;
        // Detokenize copies a value per occurrence: the answer is bounded too.
        let t = owner.create(&json!({"type": "token", "data": "z".repeat(200_000)})).await;
        let expr = format!("{{{{ {} }}}}", t["id"].as_str().unwrap());
        let res = owner.post("/detokenize", &json!(vec![expr.clone(); 60])).await;
        assert_invalid(res, &["body"]).await;
        let res = owner.post("/detokenize", &json!(vec![expr; 5])).await;
        assert_eq!(res.status(), 200);
        healthy(app).await;
    })
    .await;
}

#[tokio::test]
async fn batches_rules_and_list_filters_are_bounded() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let too_many: Vec<u32> = vec![1; 1001];
        assert_invalid(owner.post("/tokenize", &json!(too_many)).await, &["body"]).await;
        let list: Value = owner.get("/tokens").await.json().await.unwrap();
        assert_eq!(list["pagination"]["total_items"], 0, "all or nothing");
        let most: Vec<u32> = vec![1; 1000];
        assert_eq!(owner.post("/tokenize", &json!(most)).await.status(), 200);

        let rules: Vec<Value> = (1..=101)
            .map(|p| rule(p, "/", "mask", &["token:read"]))
            .collect();
        let res = app
            .post(
                "/applications",
                &json!({"name": "r", "type": "private", "rules": rules}),
            )
            .await;
        assert_invalid(res, &["rules"]).await;

        let ids: String = (0..101)
            .map(|i| format!("id=t-{i}"))
            .collect::<Vec<_>>()
            .join("&");
        assert_invalid(owner.get(&format!("/tokens?{ids}")).await, &["id"]).await;
        let meta: String = (0..21)
            .map(|i| format!("metadata.k{i}=v"))
            .collect::<Vec<_>>()
            .join("&");
        assert_invalid(owner.get(&format!("/tokens?{meta}")).await, &["metadata"]).await;
        let app_ids: String = (0..101)
            .map(|_| format!("id={}", uuid::Uuid::new_v4()))
            .collect::<Vec<_>>()
            .join("&");
        assert_invalid(app.get(&format!("/applications?{app_ids}")).await, &["id"]).await;
        // 100 ids still work (no bound-parameter limit reached).
        let ids: String = (0..100)
            .map(|i| format!("id=t-{i}"))
            .collect::<Vec<_>>()
            .join("&");
        assert_eq!(owner.get(&format!("/tokens?{ids}")).await.status(), 200);
    })
    .await;
}

#[tokio::test]
async fn tokenize_deduplicates_like_create() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let existing = owner
            .create(&json!({"type": "card_number", "data": CARD, "deduplicate_token": true}))
            .await;
        let item = json!({"type": "card_number", "data": CARD, "deduplicate_token": true});
        let fresh = json!({"type": "token", "data": "same", "deduplicate_token": true});
        let res = owner
            .post(
                "/tokenize",
                &json!({"a": item, "b": [item, fresh, fresh], "c": "plain"}),
            )
            .await;
        assert_eq!(res.status(), 200, "a deduplicated value is no conflict");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["a"]["id"], existing["id"]);
        assert_eq!(body["b"][0]["id"], existing["id"]);
        assert_eq!(
            body["b"][1]["id"], body["b"][2]["id"],
            "one token per value in a request"
        );
        assert_ne!(body["b"][1]["id"], existing["id"]);
        let listed: Value = owner.get("/tokens").await.json().await.unwrap();
        assert_eq!(
            listed["pagination"]["total_items"], 3,
            "the card, `same` and `plain`"
        );
    })
    .await;
}

/// A token id no token can have (a control character, a NUL that PostgreSQL refuses as a
/// parameter) is a 404 on every token route, never a 500; and a public key's read of a token
/// is a 403 as before, whatever the token holds.
#[tokio::test]
async fn impossible_token_ids_are_not_found() {
    on_each_backend(async |app| {
        let c = full(app).await;
        let real = c.create(&json!({"type": "token", "data": "x"})).await;
        for id in ["%00", "a%00b", "%01abc", "x%0Ay"] {
            let path = format!("/tokens/{id}");
            assert_problem(c.get(&path).await, 404).await;
            assert_problem(c.patch(&path, &json!({"metadata": {"k": "v"}})).await, 404).await;
            assert_problem(c.delete(&path).await, 404).await;
            assert_problem(c.get(&format!("{path}/children")).await, 404).await;
        }
        let public = app
            .create_app(&json!({"name": unique("pub"), "type": "public",
                                "permissions": ["token:create"]}))
            .await;
        let res = app
            .request_as(
                public["key"].as_str(),
                Method::GET,
                &format!("/tokens/{}", real["id"].as_str().unwrap()),
            )
            .send()
            .await
            .unwrap();
        assert_problem(res, 403).await;
        healthy(app).await;
    })
    .await;
}
