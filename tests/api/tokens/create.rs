//! Creating tokens: every type with its defaults and masks, custom masks and aliases, and the
//! invalid creates that name their field and store nothing.

use serde_json::{Value, json};
use tokenvault_tests::{assert_invalid, assert_problem, on_each_backend, rule, unique};

use super::{CARD, full, with};

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
