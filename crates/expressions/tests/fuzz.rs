//! A property test over random expressions (standard and vault filters with random literal
//! arguments, chained) on random data, under a process-wide memory cap: an expression that
//! made the engine allocate past the cap would abort this test binary. Every rendering either
//! fails cleanly or returns at most 1 MiB.

#![allow(clippy::unwrap_used)]

use std::alloc::System;

use cap::Cap;
use proptest::prelude::*;
use serde_json::{Value, json};
use tokenvault_domain::ports::Expressions;
use tokenvault_expressions::{LiquidExpressions, MAX_OUTPUT};

/// 256 MiB for the whole test binary: far above what a bounded rendering needs, far below what
/// an unbounded one asks for.
#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, 256 * 1024 * 1024);

/// The filters that can lengthen their input come first and are drawn more often.
const GROWING: &[&str] = &[
    "append",
    "prepend",
    "replace",
    "replace_first",
    "join",
    "split",
    "escape",
    "url_encode",
    "newline_to_br",
    "reveal_last",
    "reveal",
    "pad_left",
    "pad_right",
    "concat",
    "default",
];

const FILTERS: &[&str] = &[
    "append",
    "prepend",
    "replace",
    "replace_first",
    "join",
    "split",
    "escape",
    "escape_once",
    "url_encode",
    "newline_to_br",
    "upcase",
    "downcase",
    "capitalize",
    "default",
    "truncate",
    "truncatewords",
    "slice",
    "remove",
    "remove_first",
    "strip",
    "size",
    "first",
    "last",
    "reverse",
    "sort",
    "uniq",
    "compact",
    "concat",
    "map",
    "date",
    "plus",
    "times",
    "reveal_last",
    "reveal",
    "last4",
    "pad_left",
    "pad_right",
    "stringify",
    "json",
    "to_string",
    "to_number",
    "to_boolean",
    "alias_preserve_format",
    "alias_preserve_length",
];

fn literal() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a&*X]{0,1}".prop_map(|s| format!("'{s}'")),
        1 => "[a-z]{0,2000}".prop_map(|s| format!("'{s}'")),
        2 => (0i64..100_000).prop_map(|n| n.to_string()),
        4 => Just("data".to_string()),
        1 => Just("'$.a'".to_string()),
    ]
}

fn filter() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            3 => proptest::sample::select(GROWING),
            1 => proptest::sample::select(FILTERS),
        ],
        proptest::collection::vec(literal(), 0..4),
    )
        .prop_map(|(name, args)| {
            if args.is_empty() {
                name.to_string()
            } else {
                format!("{name}: {}", args.join(", "))
            }
        })
}

fn expression() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        (
            prop_oneof![Just("data"), Just("data.a"), Just("'lit'")],
            proptest::collection::vec(filter(), 0..6),
        ),
        1..4,
    )
    .prop_map(|outputs| {
        outputs
            .into_iter()
            .map(|(input, filters)| {
                let chain: String = filters.iter().map(|f| [" | ", f].concat()).collect();
                format!("{{{{ {input}{chain} }}}}")
            })
            .collect::<Vec<_>>()
            .join("-")
    })
}

fn data() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => "[a-z0-9\\n&<\"]{0,64}".prop_map(Value::String),
        3 => (1usize..400_000).prop_map(|n| json!("a&\\n".repeat(n))),
        1 => (1usize..100_000).prop_map(|n| json!({"a": "x".repeat(n), "b": [1, 2, 3]})),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn no_expression_grows_without_bound(expr in expression(), value in data()) {
        let engine = LiquidExpressions::new();
        if engine.check(&expr).is_ok()
            && let Ok(out) = engine.render(&expr, &value)
        {
            prop_assert!(out.len() <= MAX_OUTPUT);
        }
        // Rendering is refused as checking is, never more leniently.
        if engine.check(&expr).is_err() {
            prop_assert!(engine.render(&expr, &value).is_err());
        }
    }
}

/// The attacks found in review, each on 1.2 MB of data: without the caps each asks for
/// terabytes and aborts this binary at the allocator's cap.
#[test]
fn known_attacks_fail_cleanly() {
    let engine = LiquidExpressions::new();
    let data = json!("a&\n".repeat(400_000));
    let four_k = "y".repeat(4000);
    for expr in [
        "{{ data | reveal_last: 0, data }}".to_string(),
        "{{ data | reveal: 0, 0, data }}".to_string(),
        "{{ data | replace: '', data }}".to_string(),
        "{{ data | replace: 'a', data }}".to_string(),
        format!("{{{{ data | replace: '', '{four_k}' }}}}"),
        "{{ data | split: '' | join: data }}".to_string(),
        "{{ data | append: data | append: data | append: data }}".to_string(),
        "{{ data | pad_left: 4096, data }}".to_string(),
        "{{ data | escape | escape | escape | escape }}".to_string(),
        "{{ data }}{{ data }}{{ data }}".to_string(),
        "{{ 'now' | date: '%99999999999T' }}".to_string(),
        "{{ -9223372036854775808 | divided_by: -1 }}".to_string(),
        "{{ -9223372036854775808 | modulo: -1 }}".to_string(),
        "{{ data | json: '$..*..*..*..*' }}".to_string(),
    ] {
        if let Ok(out) = engine.render(&expr, &data) {
            assert!(out.len() <= MAX_OUTPUT, "{expr}");
        }
    }
}
