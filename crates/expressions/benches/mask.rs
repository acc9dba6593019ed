//! Mask evaluation as the vault does it on a masked read: the domain's `render_mask` over the
//! Liquid engine the server uses ([`LiquidExpressions`]), applied to a card: the `card` type's
//! default mask (an object mask: one filtered leaf, two plain `{{ data.x }}` leaves), the
//! `card_number` type's default mask (one string expression), and a custom string mask. One
//! bare `render` of an expression is measured as a reference. The bench lives here rather than
//! in tokenvault-domain because the cost of a mask is the engine's, and the domain has none.
//! Run with `cargo bench -p tokenvault-expressions`.

#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tokenvault_domain::mask::render_mask;
use tokenvault_domain::ports::Expressions;
use tokenvault_domain::token_type::TokenType;
use tokenvault_expressions::LiquidExpressions;

fn masks(c: &mut Criterion) {
    let engine = LiquidExpressions::new();
    let card = json!({
        "number": "4242424242424242",
        "expiration_month": 12,
        "expiration_year": 2030,
        "cvc": "123"
    });
    let card_number = json!("4242424242424242");

    let card_mask = TokenType::Card.default_mask().unwrap();
    assert_eq!(
        render_mask(&engine, &card_mask, &card).unwrap(),
        json!({"number": "XXXXXXXXXXXX4242", "expiration_month": 12, "expiration_year": 2030})
    );
    c.bench_function("card default mask (object) on a card", |b| {
        b.iter(|| render_mask(&engine, &card_mask, black_box(&card)).unwrap());
    });

    let number_mask = TokenType::CardNumber.default_mask().unwrap();
    assert_eq!(
        render_mask(&engine, &number_mask, &card_number).unwrap(),
        json!("XXXXXXXXXXXX4242")
    );
    c.bench_function("card_number default mask on a card number", |b| {
        b.iter(|| render_mask(&engine, &number_mask, black_box(&card_number)).unwrap());
    });

    let custom = json!("{{ data.number | slice: 0, 6 }}******{{ data.number | last4 }}");
    assert_eq!(
        render_mask(&engine, &custom, &card).unwrap(),
        json!("424242******4242")
    );
    c.bench_function("custom mask (first 6, last 4) on a card", |b| {
        b.iter(|| render_mask(&engine, &custom, black_box(&card)).unwrap());
    });

    c.bench_function(
        "reference: one render of {{ data | reveal_last: 4 }}",
        |b| {
            b.iter(|| {
                engine
                    .render("{{ data | reveal_last: 4 }}", black_box(&card_number))
                    .unwrap()
            });
        },
    );
}

criterion_group!(benches, masks);
criterion_main!(benches);
