//! What Basis Theory's clients read beyond the interface (docs/decisions.md §12): `privacy` on
//! tokens, `data` in tokenize answers under the create transform, formula `status`,
//! `GET /permissions` and `GET /logs/entity-types` — over HTTP on each database.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::{TestApp, assert_invalid, assert_problem, on_each_backend, rule};

use super::reactors::formula;
use super::tokens::{full, with};

const CARD: &str = "4242424242424242";

fn card(month: u32) -> Value {
    json!({"number": CARD, "expiration_month": month, "expiration_year": 2031, "cvc": "123"})
}

#[tokio::test]
async fn every_token_answer_carries_its_privacy() {
    on_each_backend(async |app| {
        let c = full(app).await;
        // A card in its type's container: classified by it, masked by its type's mask.
        let made = c.create(&json!({"type": "card", "data": card(1)})).await;
        let expected =
            json!({"classification": "pci", "impact_level": "high", "restriction_policy": "mask"});
        assert_eq!(made["privacy"], expected);
        let id = made["id"].as_str().unwrap();
        assert_eq!(c.read(id).await["privacy"], expected);
        let listed: Value = c.get("/tokens?type=card").await.json().await.unwrap();
        assert_eq!(listed["data"][0]["privacy"], expected);
        // A plain token has no mask: redacted; a container not of two levels: general/high.
        let plain = c
            .create(&json!({"type": "token", "data": "x", "containers": ["/a/b/c/"]}))
            .await;
        assert_eq!(
            plain["privacy"],
            json!({"classification": "general", "impact_level": "high", "restriction_policy": "redact"})
        );
        // Its own mask makes it masked; a two-level container of its own classifies it.
        let masked = c
            .create(&json!({"type": "token", "data": "abcdef", "mask": "{{ data | last4 }}",
                            "containers": ["/pii/low/"]}))
            .await;
        assert_eq!(
            masked["privacy"],
            json!({"classification": "pii", "impact_level": "low", "restriction_policy": "mask"})
        );
    })
    .await;
}

#[tokio::test]
async fn tokenize_shows_data_under_the_create_transform() {
    on_each_backend(async |app| {
        let body = json!({"card": {"type": "card", "data": card(1)}, "name": "alice"});
        // A reveal rule: the value as sent.
        let reveal = full(app).await;
        let out: Value = reveal.post("/tokenize", &body).await.json().await.unwrap();
        assert_eq!(out["card"]["data"], card(1));
        assert!(out["name"].is_string(), "a scalar leaf becomes an id");
        // The implicit transform of a plain permission is mask: the type's mask.
        let plain = with(app, &["token:create"], json!([])).await;
        let res = plain.post("/tokenize", &body).await;
        assert_eq!(res.status(), 200);
        let out: Value = res.json().await.unwrap();
        assert_eq!(out["card"]["data"]["number"], "XXXXXXXXXXXX4242");
        assert!(out["card"]["data"].get("cvc").is_none(), "{}", out["card"]);
        // A redact rule: no data at all.
        let redact = with(app, &[], json!([rule(1, "/", "redact", &["token:create"])])).await;
        let out: Value = redact.post("/tokenize", &body).await.json().await.unwrap();
        assert!(out["card"].get("data").is_none(), "{}", out["card"]);
        assert!(out["card"]["id"].is_string());
    })
    .await;
}

/// A deduplicated item shows what the caller sent, never the stored token's value: the card
/// fingerprint covers the number only, so the stored token may hold another expiry.
#[tokio::test]
async fn a_deduplicated_tokenize_item_shows_the_value_sent_not_the_stored_one() {
    on_each_backend(async |app| {
        let c = full(app).await;
        let first = c
            .create(&json!({"type": "card", "data": card(1), "deduplicate_token": true}))
            .await;
        let out: Value = c
            .post(
                "/tokenize",
                &json!({"type": "card", "data": card(7), "deduplicate_token": true}),
            )
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(out["id"], first["id"], "deduplicated");
        assert_eq!(out["data"]["expiration_month"], 7, "{out}");
        assert_eq!(c.read(first["id"].as_str().unwrap()).await["data"], card(1));
    })
    .await;
}

#[tokio::test]
async fn a_formula_says_whether_its_code_compiles() {
    on_each_backend(async |app| {
        let good = formula(
            app,
            "module.exports = async (req) => ({ raw: 1 });",
            json!([]),
            json!([]),
        )
        .await;
        assert_eq!(good["status"], "verified");
        // Stored as given (201), but marked failed; never run to find out: a module whose
        // body would throw at load compiles, so it is verified.
        let bad = formula(
            app,
            "module.exports = async (req) => { return {raw: ; } };",
            json!([]),
            json!([]),
        )
        .await;
        assert_eq!(bad["status"], "failed");
        let throws = formula(app, "throw new Error('at load');", json!([]), json!([])).await;
        assert_eq!(throws["status"], "verified");
        // A source that closes the wrapper early compiles, and checking it runs nothing of it:
        // had it run, the loop would have held the worker to its deadline (a 500), not 201.
        let escape = formula(app, "}); for(;;){} (function(){", json!([]), json!([])).await;
        assert!(escape["status"].is_string());
        // Fixed by an update: verified; the reactor's formula carries the status too.
        let id = bad["id"].as_str().unwrap();
        let res = app
            .put(
                &format!("/reactor-formulas/{id}"),
                &json!({"name": "fixed", "code": "module.exports = () => ({raw: 2});"}),
            )
            .await;
        assert_eq!(res.status(), 200);
        let fixed: Value = res.json().await.unwrap();
        assert_eq!(fixed["status"], "verified");
        let res = app
            .post(
                "/reactors",
                &json!({"name": "r", "configuration": {}, "formula": {"id": id}}),
            )
            .await;
        assert_eq!(res.status(), 201);
        let reactor: Value = res.json().await.unwrap();
        assert_eq!(reactor["formula"]["status"], "verified");
        let listed: Value = app.get("/reactor-formulas").await.json().await.unwrap();
        assert!(
            listed["data"]
                .as_array()
                .unwrap()
                .iter()
                .all(|f| f["status"] == "verified" || f["status"] == "failed"),
            "{listed}"
        );
    })
    .await;
}

#[tokio::test]
async fn permissions_are_listed_per_application_type() {
    on_each_backend(async |app| {
        let names = |v: &Value| -> Vec<String> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|p| p["type"].as_str().unwrap().to_string())
                .collect()
        };
        // Any authenticated caller, a private application's key included.
        let c = with(app, &["token:read"], json!([])).await;
        let res = c.get("/permissions?application_type=private").await;
        assert_eq!(res.status(), 200);
        let private: Value = res.json().await.unwrap();
        let private_names = names(&private);
        assert!(private_names.contains(&"token:search".to_string()));
        assert!(!private_names.contains(&"application:create".to_string()));
        for p in private.as_array().unwrap() {
            assert!(p["description"].as_str().is_some_and(|d| !d.is_empty()));
            assert!(
                p["application_types"]
                    .as_array()
                    .unwrap()
                    .contains(&json!("private"))
            );
        }
        let public: Value = app
            .get("/permissions?application_type=public")
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(names(&public), ["token:create", "token:update"]);
        let management: Value = app
            .get("/permissions?application_type=management")
            .await
            .json()
            .await
            .unwrap();
        assert!(names(&management).contains(&"log:read".to_string()));
        assert!(!names(&management).contains(&"token:read".to_string()));
        let all: Value = app.get("/permissions").await.json().await.unwrap();
        assert_eq!(
            names(&all).len(),
            private_names.len() + names(&management).len()
        );
        assert_invalid(
            app.get("/permissions?application_type=admin").await,
            &["application_type"],
        )
        .await;
        let anonymous = app
            .request_as(None, Method::GET, "/permissions")
            .send()
            .await
            .unwrap();
        assert_problem(anonymous, 401).await;
    })
    .await;
}

#[tokio::test]
async fn the_log_names_its_entity_types() {
    on_each_backend(async |app| {
        let res = app.get("/logs/entity-types").await;
        assert_eq!(res.status(), 200);
        let types: Value = res.json().await.unwrap();
        let values: Vec<&str> = types
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["value"].as_str().unwrap())
            .collect();
        for t in types.as_array().unwrap() {
            assert!(t["display_name"].as_str().is_some_and(|d| !d.is_empty()));
        }
        // Every entity type the log holds after a few actions is one of them.
        let c = full(app).await;
        c.create(&json!({"type": "token", "data": "x"})).await;
        formula(app, "module.exports = () => 1;", json!([]), json!([])).await;
        let log: Value = app.get("/logs?size=100").await.json().await.unwrap();
        let logged = log["data"].as_array().unwrap();
        assert!(logged.len() >= 3, "{log}");
        for entry in logged {
            let ty = entry["entity_type"].as_str().unwrap();
            assert!(values.contains(&ty), "{ty} is not listed");
        }
        // log:read only.
        assert_problem(c.get("/logs/entity-types").await, 403).await;
    })
    .await;
}

/// A date whose UTC form leaves the calendar the server holds is a 400, not a panic.
#[tokio::test]
async fn a_date_past_the_calendar_is_refused() {
    on_each_backend(async |app: &TestApp| {
        assert_invalid(
            app.get("/logs?start_date=9999-12-31T23:00:00-10:00").await,
            &["start_date"],
        )
        .await;
        let c = full(app).await;
        assert_invalid(
            c.post(
                "/tokens",
                &json!({"type": "token", "data": "x", "expires_at": "9999-12-31T23:00:00-10:00"}),
            )
            .await,
            &["expires_at"],
        )
        .await;
        assert_eq!(app.get("/health").await.status(), 200);
    })
    .await;
}
