//! The domain's pure request work, without a database: argument validation of a new-token
//! request (`RawNewToken::from_object` then `NewToken::parse`, what `POST /tokens` runs before
//! `create_token` touches a port) for a card token and a plain token; and the detokenization
//! template step (`collect_all`: finding the `{{ id }}` expressions of a body, as
//! `detokenize_value` does first; `{{ id | filters }}` too, as proxies do; and `substitute_all`,
//! putting the values back). Run with `cargo bench -p tokenvault-domain`.

#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::macros::datetime;
use tokenvault_domain::template::{collect_all, substitute_all};
use tokenvault_domain::token_new::{NewToken, RawNewToken};

const NOW: OffsetDateTime = datetime!(2026-01-01 00:00 UTC);

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(map) => map,
        _ => unreachable!("an object"),
    }
}

/// What `POST /tokens` does with a parsed JSON body before any port is called.
fn validate(body: &Map<String, Value>) -> NewToken {
    let raw = RawNewToken::from_object(body).unwrap();
    NewToken::parse(raw, NOW).unwrap()
}

fn validation(c: &mut Criterion) {
    let card = object(json!({
        "type": "card",
        "data": {
            "number": "4242424242424242",
            "expiration_month": 12,
            "expiration_year": 2030,
            "cvc": "123"
        },
        "metadata": {"customer": "cus_123", "source": "checkout"},
        "mask": {"number": "{{ data.number | reveal_last: 4 }}"},
        "deduplicate_token": true,
        "expires_at": "2030-12-31T23:59:59Z"
    }));
    let plain = object(json!({
        "type": "token",
        "data": {"name": "Ada Lovelace", "email": "ada@example.com", "notes": ["a", "b"]},
        "containers": ["/pii/high/"],
        "metadata": {"customer": "cus_123"}
    }));
    c.bench_function("validate new card token request", |b| {
        b.iter(|| validate(black_box(&card)));
    });
    c.bench_function("validate new plain token request", |b| {
        b.iter(|| validate(black_box(&plain)));
    });
}

/// Token ids as the vault generates them (UUIDs).
const IDS: [&str; 4] = [
    "0195f4a2-6b1e-7c3d-9a8b-1c2d3e4f5a6b",
    "0195f4a2-6b1e-7c3d-9a8b-1c2d3e4f5a6c",
    "0195f4a2-6b1e-7c3d-9a8b-1c2d3e4f5a6d",
    "0195f4a2-6b1e-7c3d-9a8b-1c2d3e4f5a6e",
];

/// A `POST /detokenize` body: four expressions (one repeated) among plain fields.
fn detokenize_body() -> Value {
    json!({
        "customer": {
            "name": format!("{{{{ {} }}}}", IDS[0]),
            "email": "ada@example.com",
            "ssn": format!("{{{{ {} }}}}", IDS[1]),
        },
        "payment": {
            "card": format!("{{{{ {} }}}}", IDS[2]),
            "amount": 1299,
            "currency": "usd",
            "description": format!("order for {{{{ {} }}}} at the shop", IDS[0]),
        },
        "bank": [format!("{{{{{}}}}}", IDS[3]), "checking"],
        "flags": {"retry": false, "note": "no {{ expression here"},
    })
}

/// A proxy body: filtered expressions (`{{ id | json: '$.path' }}`) beside plain ones.
fn proxy_body() -> Value {
    json!({
        "source": {
            "number": format!("{{{{ {} | json: '$.number' }}}}", IDS[2]),
            "exp_month": format!("{{{{ {} | json: '$.expiration_month' }}}}", IDS[2]),
            "exp_year": format!("{{{{ {} | json: '$.expiration_year' }}}}", IDS[2]),
            "cvc": format!("{{{{ {} | json: '$.cvc' }}}}", IDS[2]),
        },
        "billing": {"name": format!("{{{{ {} }}}}", IDS[0]), "country": "US"},
        "amount": 1299,
    })
}

fn detokenization(c: &mut Criterion) {
    let body = detokenize_body();
    let mut found = Vec::new();
    collect_all(&body, false, &mut found);
    assert_eq!(found.len(), 5);
    c.bench_function("find detokenize expressions in a body", |b| {
        b.iter(|| {
            let mut out = Vec::new();
            collect_all(black_box(&body), false, &mut out);
            out
        });
    });

    let proxy = proxy_body();
    let mut found = Vec::new();
    collect_all(&proxy, true, &mut found);
    assert_eq!(found.len(), 5);
    c.bench_function("find filtered expressions in a proxy body", |b| {
        b.iter(|| {
            let mut out = Vec::new();
            collect_all(black_box(&proxy), true, &mut out);
            out
        });
    });

    let values: BTreeMap<String, Value> = [
        (IDS[0].to_string(), json!("Ada Lovelace")),
        (IDS[1].to_string(), json!("XXX-XX-6789")),
        (IDS[2].to_string(), json!({"number": "XXXXXXXXXXXX4242"})),
        (IDS[3].to_string(), json!({"account_number": "XXXX6789"})),
    ]
    .into();
    c.bench_function("substitute detokenized values into a body", |b| {
        b.iter_batched(
            || body.clone(),
            |body| substitute_all(body, false, black_box(&values)),
            BatchSize::SmallInput,
        );
    });
}

criterion_group!(benches, validation, detokenization);
criterion_main!(benches);
