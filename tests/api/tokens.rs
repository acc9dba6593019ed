//! Tokens over HTTP: every endpoint, every transform, the 4xx answers, dedup under concurrency,
//! encryption at rest and master key rotation — on each database.

use reqwest::{Method, Response};
use serde_json::{Value, json};
use tokenvault_persistence::testing::backends;
use tokenvault_tests::{
    TestApp, assert_invalid, assert_problem, full_private, on_each_backend, private_with, rule,
    unique,
};

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

fn samples() -> Vec<(&'static str, Value, &'static str, Value)> {
    vec![
        (
            "token",
            json!({"any": ["json", 1, true, null]}),
            "/general/high/",
            Value::Null,
        ),
        (
            "card",
            json!({"number": CARD, "expiration_month": 12, "expiration_year": 2030, "cvc": "123"}),
            "/pci/high/",
            json!({"number": "XXXXXXXXXXXX4242", "expiration_month": 12, "expiration_year": 2030}),
        ),
        (
            "bank",
            json!({"routing_number": "021000021", "account_number": "9876543210"}),
            "/bank/high/",
            json!({"routing_number": "021000021", "account_number": "XXXXXX3210"}),
        ),
        (
            "card_number",
            json!(CARD),
            "/pci/high/",
            json!("XXXXXXXXXXXX4242"),
        ),
        (
            "social_security_number",
            json!("123-45-6789"),
            "/pii/high/",
            json!("XXX-XX-6789"),
        ),
        (
            "employer_id_number",
            json!("12-3456789"),
            "/pii/high/",
            json!("XX-XXX6789"),
        ),
        (
            "us_bank_account_number",
            json!("000123456789"),
            "/bank/high/",
            json!("XXXXXXXX6789"),
        ),
        (
            "us_bank_routing_number",
            json!("021000021"),
            "/bank/low/",
            json!("XXXXX0021"),
        ),
    ]
}

#[tokio::test]
async fn every_type_round_trips_with_its_defaults() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let masker = with(app, &[], json!([rule(1, "/", "mask", &["token:read"])])).await;
        for (ty, data, container, mask) in samples() {
            let created = owner
                .create(&json!({"type": ty, "data": data, "metadata": {"k": "v"}}))
                .await;
            assert_eq!(created["type"], ty);
            assert_eq!(created["containers"], json!([container]), "{ty}");
            assert_eq!(created["metadata"], json!({"k": "v"}));
            assert!(created["created_at"].as_str().unwrap().ends_with('Z'));
            let id = created["id"].as_str().unwrap();
            let uuid = uuid::Uuid::parse_str(id).expect("generated ids are UUIDs");
            // Version 7: the id's time is the token's `created_at`, to the millisecond.
            assert_eq!(uuid.get_version_num(), 7, "{id}");
            let (secs, nanos) = uuid.get_timestamp().unwrap().to_unix();
            let at = time::OffsetDateTime::parse(
                created["created_at"].as_str().unwrap(),
                &time::format_description::well_known::Rfc3339,
            )
            .unwrap();
            assert_eq!(
                i128::from(secs) * 1000 + i128::from(nanos / 1_000_000),
                at.unix_timestamp_nanos() / 1_000_000,
                "{id} against {at}"
            );
            assert_eq!(owner.read(id).await["data"], data, "{ty} reveal");
            let shown = masker.read(id).await;
            assert_eq!(
                shown.get("data").cloned().unwrap_or(Value::Null),
                mask,
                "{ty} mask"
            );
        }
    })
    .await;
}

#[tokio::test]
async fn invalid_creates_name_the_field_and_store_nothing() {
    on_each_backend(async |app| {
        let c = full(app).await;
        let cases: Vec<(Value, &str)> = vec![
            (json!({"data": "x"}), "type"),
            (json!({"type": "gold", "data": "x"}), "type"),
            (json!({"type": "token"}), "data"),
            (json!({"type": "token", "data": null}), "data"),
            (json!({"type": "card", "data": {"number": "4242424242424241", "expiration_month": 1, "expiration_year": 2030}}), "data.number"),
            (json!({"type": "card", "data": {"number": CARD, "expiration_month": 13, "expiration_year": 2030}}), "data.expiration_month"),
            (json!({"type": "card", "data": {"number": CARD, "expiration_month": 1, "expiration_year": 30}}), "data.expiration_year"),
            (json!({"type": "card", "data": {"number": CARD, "expiration_month": 1, "expiration_year": 2030, "cvc": "12"}}), "data.cvc"),
            (json!({"type": "bank", "data": {"routing_number": "021000022", "account_number": "1"}}), "data.routing_number"),
            (json!({"type": "bank", "data": {"routing_number": "021000021", "account_number": "1".repeat(18)}}), "data.account_number"),
            (json!({"type": "card_number", "data": "4242424242424241"}), "data"),
            (json!({"type": "card_number", "data": "424242424242"}), "data"),
            (json!({"type": "social_security_number", "data": "12345678"}), "data"),
            (json!({"type": "employer_id_number", "data": "1234567890"}), "data"),
            (json!({"type": "us_bank_account_number", "data": "12"}), "data"),
            (json!({"type": "us_bank_routing_number", "data": "021000022"}), "data"),
            (json!({"type": "token", "data": "x", "containers": ["/a/", "/b/"]}), "containers"),
            (json!({"type": "token", "data": "x", "containers": ["no-slash"]}), "containers.0"),
            (json!({"type": "token", "data": "x", "metadata": {"n": 1}}), "metadata.n"),
            (json!({"type": "token", "data": "x", "id": "ab"}), "id"),
            (json!({"type": "token", "data": "x", "id": "a/b/c"}), "id"),
            (json!({"type": "token", "data": "x", "mask": "{{ data | slice: 0, 2"}), "mask"),
            (json!({"type": "token", "data": "x", "mask": {"a": "{{ data | nope }}"}}), "mask.a"),
            (json!({"type": "token", "data": "x", "mask": 7}), "mask"),
            (json!({"type": "token", "data": "x", "fingerprint_expression": "{% if %}"}), "fingerprint_expression"),
            (json!({"type": "token", "data": "x", "expires_at": "2001-01-01T00:00:00Z"}), "expires_at"),
            (json!({"type": "token", "data": "x", "deduplicate_token": "yes"}), "deduplicate_token"),
        ];
        for (body, field) in cases {
            assert_invalid(c.post("/tokens", &body).await, &[field]).await;
        }
        let listed: Value = c.get("/tokens").await.json().await.unwrap();
        assert_eq!(listed["pagination"]["total_items"], 0, "a refused create stored something");

        let id = unique("custom");
        let created = c.create(&json!({"type": "token", "data": "x", "id": id})).await;
        assert_eq!(created["id"], id);
        let taken = assert_problem(c.post("/tokens", &json!({"type": "token", "data": "y", "id": id})).await, 409).await;
        assert_eq!(taken["detail"], "A token with this id already exists.");
        assert_eq!(c.read(&id).await["data"], "x", "the first token is intact");
        // One tokenize naming an id twice says so, and stores neither.
        let twice = unique("twice");
        let repeated = assert_problem(
            c.post(
                "/tokenize",
                &json!([{"type": "token", "data": "a", "id": twice}, {"type": "token", "data": "b", "id": twice}]),
            )
            .await,
            409,
        )
        .await;
        assert_eq!(repeated["detail"], "The request gives the same token id more than once.");
        assert_eq!(c.get(&format!("/tokens/{twice}")).await.status(), 404);
    })
    .await;
}

#[tokio::test]
async fn permissions_and_rules_decide_every_operation() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let card = owner.create(&json!({"type": "card_number", "data": CARD})).await;
        let plain = owner.create(&json!({"type": "token", "data": "plain-secret"})).await;
        let (card_id, plain_id) = (card["id"].as_str().unwrap(), plain["id"].as_str().unwrap());

        let mgmt = Client { app, key: app.key.clone() };
        assert_problem(mgmt.post("/tokens", &json!({"type": "token", "data": "x"})).await, 403).await;

        let public = Client { app, key: app.app("public", &["token:create"]).await["key"].as_str().unwrap().to_string() };
        let by_public = public.create(&json!({"type": "token", "data": "from-browser"})).await;
        assert_problem(public.get(&format!("/tokens/{}", by_public["id"].as_str().unwrap())).await, 403).await;

        // Plain token:read → implicit mask.
        let reader = with(app, &["token:read"], json!([])).await;
        assert_eq!(reader.read(card_id).await["data"], "XXXXXXXXXXXX4242");
        assert!(reader.read(plain_id).await.get("data").is_none(), "mask without a mask: no data");
        // First matching rule by priority decides; descendants are covered.
        let ruled = with(app, &[], json!([
            rule(2, "/", "redact", &["token:read"]),
            rule(1, "/pci/", "reveal", &["token:read"]),
        ])).await;
        assert_eq!(ruled.read(card_id).await["data"], CARD);
        assert!(ruled.read(plain_id).await.get("data").is_none(), "redact");
        // A rule on another container, or without the permission, does not grant.
        let elsewhere = with(app, &[], json!([rule(1, "/bank/", "reveal", &["token:read"]), rule(2, "/pci/", "reveal", &["token:create"])])).await;
        assert_problem(elsewhere.get(&format!("/tokens/{card_id}")).await, 403).await;
        // Lists count only what the caller may read.
        let listed: Value = ruled.get("/tokens?size=100").await.json().await.unwrap();
        assert_eq!(listed["pagination"]["total_items"], 3);
        let pci_only = with(app, &[], json!([rule(1, "/pci/", "mask", &["token:read"])])).await;
        let listed: Value = pci_only.get("/tokens").await.json().await.unwrap();
        assert_eq!(listed["pagination"]["total_items"], 1);
        assert_eq!(listed["data"][0]["data"], "XXXXXXXXXXXX4242");
        // Create into a container needs token:create there.
        let creator = with(app, &[], json!([rule(1, "/general/", "mask", &["token:create"])])).await;
        creator.create(&json!({"type": "token", "data": "ok"})).await;
        assert_problem(creator.post("/tokens", &json!({"type": "card_number", "data": CARD})).await, 403).await;
        // Update and delete need their own permissions.
        assert_problem(reader.patch(&format!("/tokens/{plain_id}"), &json!({"metadata": {"a": "b"}})).await, 403).await;
        assert_problem(reader.delete(&format!("/tokens/{plain_id}")).await, 403).await;
        assert_eq!(owner.read(plain_id).await["metadata"], json!({}));

        // Another tenant sees nothing.
        let (_, other_mgmt) = app.new_tenant(&unique("other")).await;
        let other_key: Value = app
            .request_as(Some(&other_mgmt), Method::POST, "/applications")
            .json(&json!({"name": "o", "type": "private", "permissions": ["token:read", "token:delete", "token:update"]}))
            .send().await.unwrap().json().await.unwrap();
        let other = Client { app, key: other_key["key"].as_str().unwrap().to_string() };
        assert_problem(other.get(&format!("/tokens/{card_id}")).await, 404).await;
        assert_problem(other.delete(&format!("/tokens/{card_id}")).await, 404).await;
        assert_problem(other.patch(&format!("/tokens/{card_id}"), &json!({"metadata": {}})).await, 404).await;
        let theirs: Value = other.get("/tokens").await.json().await.unwrap();
        assert_eq!(theirs["pagination"]["total_items"], 0);
    })
    .await;
}

#[tokio::test]
async fn custom_masks_and_aliases() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let masker = with(app, &[], json!([rule(1, "/", "mask", &["token:read"])])).await;
        let t = owner.create(&json!({"type": "token", "data": "abcdef-123456", "mask": "{{ data | slice: 0, 3 }}***"})).await;
        assert_eq!(masker.read(t["id"].as_str().unwrap()).await["data"], "abc***");
        let o = owner
            .create(&json!({"type": "token", "data": {"name": "Ada", "ssn": "123456789", "n": 5},
                            "mask": {"name": "{{ data.name }}", "ssn": "{{ data.ssn | reveal_last: 2, '*' }}"}}))
            .await;
        assert_eq!(masker.read(o["id"].as_str().unwrap()).await["data"], json!({"name": "Ada", "ssn": "*******89"}));
        let alias = owner
            .create(&json!({"type": "card_number", "data": CARD, "id": "{{ data | alias_preserve_format }}"}))
            .await;
        let id = alias["id"].as_str().unwrap();
        assert_eq!(id.len(), 16);
        assert!(id.bytes().all(|b| b.is_ascii_digit()));
        assert_ne!(id, CARD);
        assert_eq!(owner.read(id).await["data"], CARD);
    })
    .await;
}

#[tokio::test]
async fn patch_merges_and_moves_with_permission() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let t = owner.create(&json!({"type": "token", "data": {"a": 1}, "metadata": {"keep": "1", "drop": "2"}})).await;
        let path = format!("/tokens/{}", t["id"].as_str().unwrap());
        let wrong_type = app.request_as(Some(&owner.key), Method::PATCH, &path).json(&json!({"metadata": {}})).send().await.unwrap();
        assert_problem(wrong_type, 415).await;
        let res = owner.patch(&path, &json!({"metadata": {"drop": null, "add": "3"}, "data": {"b": 2}, "containers": ["/general/low/"]})).await;
        assert_eq!(res.status(), 200);
        let after = owner.read(t["id"].as_str().unwrap()).await;
        assert_eq!(after["metadata"], json!({"keep": "1", "add": "3"}));
        assert_eq!(after["data"], json!({"a": 1, "b": 2}), "objects merge (RFC 7386)");
        assert_eq!(after["containers"], json!(["/general/low/"]));
        assert!(after["modified_at"].is_string());
        for (body, field) in [
            (json!({"data": null}), "data"),
            (json!({"metadata": {"x": 1}}), "metadata.x"),
            (json!({"containers": ["/a/", "/b/"]}), "containers"),
            (json!({"mask": "{{ oops"}), "mask"),
            (json!({"expires_at": "2001-01-01T00:00:00Z"}), "expires_at"),
        ] {
            assert_invalid(owner.patch(&path, &body).await, &[field]).await;
        }
        assert_problem(owner.patch("/tokens/nope-nope", &json!({})).await, 404).await;
        let bad_json = app
            .request_as(Some(&owner.key), Method::PATCH, &path)
            .header("content-type", "application/merge-patch+json")
            .body("{")
            .send()
            .await
            .unwrap();
        assert_problem(bad_json, 400).await;
        // Moving needs token:update on the destination too.
        let mover = with(app, &[], json!([rule(1, "/general/", "reveal", &["token:update", "token:read"])])).await;
        assert_problem(mover.patch(&path, &json!({"containers": ["/pci/"]})).await, 403).await;
        assert_eq!(mover.patch(&path, &json!({"containers": ["/general/high/"]})).await.status(), 200);
    })
    .await;
}

#[tokio::test]
async fn list_filters_and_pages() {
    on_each_backend(async |app| {
        let c = full(app).await;
        let run = unique("run");
        let mut ids = Vec::new();
        for i in 0..3 {
            ids.push(
                c.create(&json!({"type": "token", "data": i, "metadata": {"run": run}}))
                    .await["id"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
        }
        let card = c
            .create(&json!({"type": "card_number", "data": CARD, "metadata": {"run": run}}))
            .await;
        let body: Value = c
            .get(&format!("/tokens?metadata.run={run}&type=token"))
            .await
            .json()
            .await
            .unwrap();
        let listed: Vec<&str> = body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            listed,
            ids.iter().rev().map(String::as_str).collect::<Vec<_>>()
        );
        let brackets: Value = c
            .get(&format!("/tokens?metadata[run]={run}&size=2&page=2"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(
            brackets["pagination"],
            json!({"total_items": 4, "page_number": 2, "page_size": 2, "total_pages": 2})
        );
        let by_id: Value = c
            .get(&format!(
                "/tokens?id={}&id={}",
                ids[0],
                card["id"].as_str().unwrap()
            ))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(by_id["pagination"]["total_items"], 2);
        assert_invalid(c.get("/tokens?type=gold").await, &["type"]).await;
        assert_invalid(c.get("/tokens?size=0").await, &["size"]).await;
    })
    .await;
}

#[tokio::test]
async fn tokenize_and_detokenize() {
    on_each_backend(async |app| {
        let c = full(app).await;
        let res = c
            .post("/tokenize", &json!({"card": {"type": "card_number", "data": CARD}, "name": "Ada", "list": ["x", 7, true], "none": null}))
            .await;
        assert_eq!(res.status(), 200);
        let out: Value = res.json().await.unwrap();
        assert_eq!(out["card"]["type"], "card_number");
        // Under the create transform (a reveal rule here): the value sent (decisions §12).
        assert_eq!(out["card"]["data"], CARD);
        assert!(out["none"].is_null());
        let name_id = out["name"].as_str().unwrap();
        assert_eq!(c.read(name_id).await["data"], "Ada");
        let list: Vec<Value> = out["list"].as_array().unwrap().clone();
        let mut values = Vec::new();
        for id in &list {
            values.push(c.read(id.as_str().unwrap()).await["data"].clone());
        }
        assert_eq!(values, vec![json!("x"), json!(7), json!(true)]);

        let before: Value = c.get("/tokens").await.json().await.unwrap();
        let bad = c.post("/tokenize", &json!({"ok": "fine", "card": {"type": "card_number", "data": "123"}})).await;
        assert_invalid(bad, &["card.data"]).await;
        let after: Value = c.get("/tokens").await.json().await.unwrap();
        assert_eq!(before["pagination"]["total_items"], after["pagination"]["total_items"], "all or nothing");

        let card_id = out["card"]["id"].as_str().unwrap();
        let body = json!({"n": format!("{{{{ {name_id} }}}}"), "deep": [format!("card: {{{{{card_id}}}}}")], "k": 1});
        let res = c.post("/detokenize", &body).await;
        assert_eq!(res.status(), 200);
        assert_eq!(res.json::<Value>().await.unwrap(), json!({"n": "Ada", "deep": [format!("card: {CARD}")], "k": 1}));
        assert_invalid(c.post("/detokenize", &json!({"x": "{{ no-such-token }}"})).await, &["body"]).await;
        let pci_only = with(app, &[], json!([rule(1, "/pci/", "reveal", &["token:read"])])).await;
        assert_problem(pci_only.post("/detokenize", &json!({"x": format!("{{{{ {name_id} }}}}")})).await, 403).await;
        let many: Vec<Value> = (0..101).map(|i| json!(format!("{{{{ tok-{i:03} }}}}"))).collect();
        assert_invalid(c.post("/detokenize", &json!(many)).await, &["body"]).await;
    })
    .await;
}

#[tokio::test]
async fn fingerprints_and_deduplication() {
    on_each_backend(async |app| {
        let c = full(app).await;
        let plain = c.create(&json!({"type": "card_number", "data": CARD})).await;
        assert!(plain.get("fingerprint").is_none(), "off by default");
        let fp = c.create(&json!({"type": "card_number", "data": CARD, "fingerprint_expression": "{{ data }}"})).await;
        let fp2 = c.create(&json!({"type": "card_number", "data": CARD, "fingerprint_expression": "{{ data }}"})).await;
        let f = fp["fingerprint"].as_str().unwrap();
        assert!(f.chars().all(|ch| ch.is_ascii_alphanumeric() && !"0OIl".contains(ch)), "base58");
        assert_eq!(f, fp2["fingerprint"].as_str().unwrap());
        assert!(!f.contains("4242"));
        // Per-token deduplication returns the existing token with 200.
        let first = c.post("/tokens", &json!({"type": "social_security_number", "data": "123-45-6789", "deduplicate_token": true})).await;
        assert_eq!(first.status(), 201);
        let first: Value = first.json().await.unwrap();
        let again = c.post("/tokens", &json!({"type": "social_security_number", "data": "123456789", "deduplicate_token": true})).await;
        assert_eq!(again.status(), 200, "digits only: the same SSN");
        assert_eq!(again.json::<Value>().await.unwrap()["id"], first["id"]);
        // An update keeps per-token deduplication and the fingerprint; new data changes it.
        let first_id = first["id"].as_str().unwrap();
        let patched = c.patch(&format!("/tokens/{first_id}"), &json!({"metadata": {"k": "v"}})).await;
        assert_eq!(patched.status(), 200);
        assert_eq!(patched.json::<Value>().await.unwrap()["fingerprint"], first["fingerprint"]);
        let third = c.post("/tokens", &json!({"type": "social_security_number", "data": "123456789", "deduplicate_token": true})).await;
        assert_eq!(third.status(), 200);
        assert_eq!(third.json::<Value>().await.unwrap()["id"], first["id"]);
        let changed = c.patch(&format!("/tokens/{first_id}"), &json!({"data": "987-65-4321"})).await;
        let changed: Value = changed.json().await.unwrap();
        assert!(changed["fingerprint"].is_string());
        assert_ne!(changed["fingerprint"], first["fingerprint"]);
        // Tenant settings.
        assert_eq!(app.put("/tenants/self", &json!({"name": "Default", "settings": {"fingerprint_tokens": "true"}})).await.status(), 200);
        let c2 = full(app).await;
        let fingerprinted = c2.create(&json!({"type": "token", "data": {"b": 1, "a": 2}})).await;
        let reordered = c2.create(&json!({"type": "token", "data": {"a": 2, "b": 1}})).await;
        assert_eq!(fingerprinted["fingerprint"], reordered["fingerprint"], "canonical JSON");
    })
    .await;
}

#[tokio::test]
async fn fifty_concurrent_identical_creates_make_one_token() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.http.workers = Some(2)).await;
        assert_eq!(
            app.put(
                "/tenants/self",
                &json!({"name": "Default", "settings": {"deduplicate_tokens": "true"}})
            )
            .await
            .status(),
            200
        );
        let key = full_private(&app).await;
        let url = format!("{}/tokens", app.base);
        let client = reqwest::Client::new();
        let body = json!({"type": "card_number", "data": CARD});
        let mut tasks = Vec::new();
        for _ in 0..50 {
            let (client, url, key, body) = (client.clone(), url.clone(), key.clone(), body.clone());
            tasks.push(tokio::spawn(async move {
                let res = client
                    .post(url)
                    .header("SVC-API-KEY", key)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                let status = res.status().as_u16();
                let id = res.json::<Value>().await.unwrap()["id"]
                    .as_str()
                    .map(str::to_owned);
                (status, id)
            }));
        }
        let mut statuses = Vec::new();
        let mut ids = std::collections::BTreeSet::new();
        for t in tasks {
            let (status, id) = t.await.unwrap();
            statuses.push(status);
            ids.extend(id);
        }
        assert!(
            statuses.iter().all(|s| *s == 200 || *s == 201),
            "{backend:?}: {statuses:?}"
        );
        assert_eq!(
            statuses.iter().filter(|s| **s == 201).count(),
            1,
            "{backend:?}: exactly one create"
        );
        assert_eq!(
            ids.len(),
            1,
            "{backend:?}: every answer names the same token"
        );
        let listed: Value = app
            .request_as(Some(&key), Method::GET, "/tokens?type=card_number")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(listed["pagination"]["total_items"], 1, "{backend:?}");
        app.stop().await;
    }
}

#[tokio::test]
async fn associations_and_children() {
    on_each_backend(async |app| {
        let c = full(app).await;
        let parent = c.create(&json!({"type": "token", "data": "p"})).await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let child = c.create(&json!({"type": "token", "data": "c"})).await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let link = format!("/tokens/{parent}/children/{child}");
        assert_eq!(c.post(&link, &json!(null)).await.status(), 204);
        let again = assert_problem(c.post(&link, &json!(null)).await, 409).await;
        assert_eq!(again["detail"], "The tokens are already associated.");
        assert_problem(
            c.post(&format!("/tokens/{parent}/children/nope-1"), &json!(null))
                .await,
            404,
        )
        .await;
        let made = c
            .post(
                &format!("/tokens/{parent}/children"),
                &json!({"type": "card_number", "data": CARD}),
            )
            .await;
        assert_eq!(made.status(), 201);
        let made: Value = made.json().await.unwrap();
        assert!(made.get("data").is_none());
        let kids: Value = c
            .get(&format!("/tokens/{parent}/children"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(kids["pagination"]["total_items"], 2);
        assert!(
            kids["data"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t.get("data").is_some()),
            "list-children carries data"
        );
        let cards: Value = c
            .get(&format!("/tokens/{parent}/children?type=card_number"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(cards["data"][0]["id"], made["id"]);
        assert_eq!(c.delete(&link).await.status(), 204);
        assert_problem(c.delete(&link).await, 404).await;
        assert_eq!(
            c.delete(&format!("/tokens/{}", made["id"].as_str().unwrap()))
                .await
                .status(),
            204
        );
        let kids: Value = c
            .get(&format!("/tokens/{parent}/children"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(
            kids["pagination"]["total_items"], 0,
            "deleting a token removes its links"
        );
        assert_problem(c.get("/tokens/nope-2/children").await, 404).await;
    })
    .await;
}

#[tokio::test]
async fn usage_report_counts_types_and_monthly_active_tokens() {
    on_each_backend(async |app| {
        let report = async || -> Value {
            let res = app.get("/tenants/self/reports/usage").await;
            assert_eq!(res.status(), 200);
            res.json::<Value>().await.unwrap()["token_report"].clone()
        };
        let empty = report().await;
        assert_eq!(empty["monthly_active_tokens"], 0);
        assert_eq!(empty["included_monthly_active_tokens"], 1000);
        let c = full(app).await;
        let a = c.create(&json!({"type": "token", "data": "a"})).await;
        c.create(&json!({"type": "card_number", "data": CARD}))
            .await;
        c.read(a["id"].as_str().unwrap()).await;
        c.read(a["id"].as_str().unwrap()).await;
        let r = report().await;
        assert_eq!(r["metrics_by_type"]["token"]["count"], 1);
        assert_eq!(r["metrics_by_type"]["card_number"]["count"], 1);
        assert!(
            r["metrics_by_type"]["token"]["last_created_at"]
                .as_str()
                .unwrap()
                .ends_with('Z')
        );
        assert_eq!(r["monthly_active_tokens"], 2);
        assert_eq!(
            c.delete(&format!("/tokens/{}", a["id"].as_str().unwrap()))
                .await
                .status(),
            204
        );
        let r = report().await;
        assert!(
            r["metrics_by_type"]
                .get("token")
                .is_none_or(|m| m["count"] == 0)
        );
        assert_eq!(
            r["monthly_active_tokens"], 2,
            "a deleted token keeps its count"
        );
        // A batch's new tokens count once each (`/tokenize` writes no activity row for them).
        let batch = c
            .post("/tokenize", &json!([{"type": "token", "data": "b"}, "c"]))
            .await;
        assert_eq!(batch.status(), 200);
        assert_eq!(report().await["monthly_active_tokens"], 4);
        let reader = with(app, &["token:read"], json!([])).await;
        assert_problem(reader.get("/tenants/self/reports/usage").await, 403).await;
    })
    .await;
}

#[tokio::test]
async fn expired_tokens_vanish_at_once() {
    on_each_backend(async |app| {
        let c = full(app).await;
        let at = time::OffsetDateTime::now_utc() + time::Duration::seconds(2);
        let at = at
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap();
        let t = c
            .create(&json!({"type": "token", "data": "short-lived", "expires_at": at}))
            .await;
        let id = t["id"].as_str().unwrap();
        assert_eq!(c.read(id).await["data"], "short-lived");
        tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
        assert_problem(c.get(&format!("/tokens/{id}")).await, 404).await;
        let listed: Value = c.get("/tokens").await.json().await.unwrap();
        assert_eq!(listed["pagination"]["total_items"], 0);
    })
    .await;
}

#[tokio::test]
async fn no_token_value_or_key_is_stored_in_clear() {
    on_each_backend(async |app| {
        let c = full(app).await;
        let secrets = ["4111111111111111", "987-65-4329", "Sup3rS3cretValue-xyz"];
        // (Masks are sealed; search index expressions, like fingerprint expressions, are not.)
        let mask = "{{ data | reveal_last: 3 }}";
        c.create(&json!({"type": "card_number", "data": secrets[0], "mask": mask}))
            .await;
        c.create(&json!({"type": "social_security_number", "data": secrets[1]}))
            .await;
        c.create(&json!({"type": "token", "data": {"nested": secrets[2]}}))
            .await;
        let dump = app.dump_database().await;
        assert!(
            dump.len() > 1000,
            "the dump has content ({} bytes)",
            dump.len()
        );
        let text = String::from_utf8_lossy(&dump);
        assert!(
            text.contains("/pci/high/"),
            "the dump is readable where it should be"
        );
        for secret in secrets
            .iter()
            .copied()
            .chain([app.key.as_str(), c.key.as_str(), mask])
        {
            assert!(
                !text.contains(secret),
                "{secret} found in the {:?} database",
                app.backend
            );
        }
    })
    .await;
}

#[tokio::test]
async fn master_key_rotation_while_serving() {
    for backend in backends() {
        let old = tokenvault_crypto::MasterKey::generate_base64().to_string();
        let new = tokenvault_crypto::MasterKey::generate_base64().to_string();
        let mut app =
            TestApp::spawn_with(backend, |c| c.keys.master = Some(old.clone().into())).await;
        let c = Client {
            app: &app,
            key: full_private(&app).await,
        };
        let id = c
            .create(&json!({"type": "token", "data": "rotate-me"}))
            .await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let key = c.key.clone();

        let printed = tokenvault_server::rotate_master_key(&app.config, &new)
            .await
            .unwrap();
        assert_eq!(printed["rewrapped_tenant_keys"], 1);
        let again = tokenvault_server::rotate_master_key(&app.config, &new)
            .await
            .unwrap();
        assert_eq!(
            again["rewrapped_tenant_keys"], 0,
            "already under the new key"
        );
        // The running server keeps serving.
        let read = app
            .request_as(Some(&key), Method::GET, &format!("/tokens/{id}"))
            .send()
            .await
            .unwrap();
        assert_eq!(read.json::<Value>().await.unwrap()["data"], "rotate-me");

        // A fresh server with only the old key refuses to start; with the new one it serves.
        app.shutdown().await.unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let refused = tokenvault_server::run(app.config.clone(), listener, async {}).await;
        assert!(
            refused.is_err(),
            "only the old master key: refused at start"
        );
        app.restart_with(|c| c.keys.master = Some(new.clone().into()))
            .await;
        let read = app
            .request_as(Some(&key), Method::GET, &format!("/tokens/{id}"))
            .send()
            .await
            .unwrap();
        assert_eq!(read.json::<Value>().await.unwrap()["data"], "rotate-me");
        app.stop().await;
    }
}
/// Development mode (no master key configured: the server generated `<data dir>/master.key`):
/// `keys rotate-master` writes the new key into that file once the tenant keys are re-wrapped,
/// keeps the old one beside it as a previous key, and the CLI and the next start work on.
#[tokio::test]
async fn rotating_a_development_master_key_rewrites_the_data_dir_key_file() {
    for backend in backends() {
        let mut app = TestApp::spawn(backend).await;
        assert!(app.config.keys.master.is_none() && app.config.keys.master_file.is_none());
        let key = full_private(&app).await;
        let made: Value = app
            .request_as(Some(&key), Method::POST, "/tokens")
            .json(&json!({"type": "token", "data": "dev-rotate"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = made["id"].as_str().unwrap().to_string();
        let key_file = app.config.data_dir.join("master.key");
        let old = std::fs::read_to_string(&key_file).unwrap();
        let new = tokenvault_crypto::MasterKey::generate_base64().to_string();

        let printed = tokenvault_server::rotate_master_key(&app.config, &new)
            .await
            .unwrap();
        assert_eq!(printed["rewrapped_tenant_keys"], 1, "{printed}");
        assert_eq!(std::fs::read_to_string(&key_file).unwrap().trim(), new);
        let previous = app.config.data_dir.join("master.key.previous");
        assert_eq!(
            std::fs::read_to_string(&previous).unwrap().trim(),
            old.trim()
        );
        #[cfg(unix)]
        for file in [&key_file, &previous] {
            use std::os::unix::fs::PermissionsExt as _;
            let bits = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
            assert_eq!(bits, 0o600, "{}", file.display());
        }

        // The CLI works on the data dir as rotation left it.
        let (report, ok) = tokenvault_server::verify_audit(&app.config, None)
            .await
            .unwrap();
        assert!(ok, "{report}");
        app.new_tenant("after-rotation").await;
        let again = tokenvault_server::rotate_master_key(&app.config, &new)
            .await
            .unwrap();
        assert_eq!(again["rewrapped_tenant_keys"], 0, "{again}");

        // The next start serves, with the token readable.
        app.restart().await;
        let read: Value = app
            .request_as(Some(&key), Method::GET, &format!("/tokens/{id}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(read["data"], "dev-rotate");
        app.stop().await;
    }
}

/// A development-mode rotation cut short after the re-wrap, before `master.key` was replaced
/// (`master.key.new` holds the new key, `master.key` still the old one): the next start and the
/// CLI unwrap the re-wrapped tenant keys, a rotation to yet another key is refused, and running
/// the rotation again with the staged key finishes it. A staged file cut short before its fsync
/// (empty) wrapped nothing: it is ignored, and the next rotation replaces it.
#[tokio::test]
async fn an_interrupted_development_rotation_still_serves_and_finishes() {
    for backend in backends() {
        let mut app = TestApp::spawn(backend).await;
        let c = Client {
            app: &app,
            key: full_private(&app).await,
        };
        let id = c
            .create(&json!({"type": "token", "data": "cut-short"}))
            .await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let key = c.key.clone();
        let dir = app.config.data_dir.clone();
        let (key_file, staged, previous) = (
            dir.join("master.key"),
            dir.join("master.key.new"),
            dir.join("master.key.previous"),
        );
        let read_key =
            |path: &std::path::Path| std::fs::read_to_string(path).unwrap().trim().to_string();
        let old = read_key(&key_file);
        let new = tokenvault_crypto::MasterKey::generate_base64().to_string();
        tokenvault_server::rotate_master_key(&app.config, &new)
            .await
            .unwrap();
        // The files as a crash between the re-wrap and the rename leaves them.
        std::fs::rename(&key_file, &staged).unwrap();
        std::fs::remove_file(&previous).unwrap();
        std::fs::write(&key_file, format!("{old}\n")).unwrap();

        app.restart().await;
        let read = app
            .request_as(Some(&key), Method::GET, &format!("/tokens/{id}"))
            .send()
            .await
            .unwrap();
        assert_eq!(read.json::<Value>().await.unwrap()["data"], "cut-short");
        let (report, ok) = tokenvault_server::verify_audit(&app.config, None)
            .await
            .unwrap();
        assert!(ok, "{report}");

        let other = tokenvault_crypto::MasterKey::generate_base64().to_string();
        let refused = tokenvault_server::rotate_master_key(&app.config, &other)
            .await
            .expect_err("another key while one is staged")
            .to_string();
        assert!(refused.contains("master.key.new"), "{refused}");
        assert!(
            !refused.contains(&new) && !refused.contains(&old),
            "{refused}"
        );
        assert_eq!(read_key(&staged), new);
        assert_eq!(read_key(&key_file), old);

        let finished = tokenvault_server::rotate_master_key(&app.config, &read_key(&staged))
            .await
            .unwrap();
        assert_eq!(finished["rewrapped_tenant_keys"], 0, "{finished}");
        assert_eq!(read_key(&key_file), new);
        assert_eq!(read_key(&previous), old);
        assert!(!staged.exists());

        // A staged file cut short before its fsync: ignored at start, replaced by a rotation,
        // which keeps only the key it replaces as previous.
        std::fs::write(&staged, "").unwrap();
        app.restart().await;
        let read = app
            .request_as(Some(&key), Method::GET, &format!("/tokens/{id}"))
            .send()
            .await
            .unwrap();
        assert_eq!(read.json::<Value>().await.unwrap()["data"], "cut-short");
        let again = tokenvault_server::rotate_master_key(&app.config, &other)
            .await
            .unwrap();
        assert_eq!(again["rewrapped_tenant_keys"], 1, "{again}");
        assert_eq!(read_key(&key_file), other);
        assert_eq!(read_key(&previous), new);
        app.restart().await;
        let read = app
            .request_as(Some(&key), Method::GET, &format!("/tokens/{id}"))
            .send()
            .await
            .unwrap();
        assert_eq!(read.json::<Value>().await.unwrap()["data"], "cut-short");
        app.stop().await;
    }
}
