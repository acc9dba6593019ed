//! The search language's tests: every field and operator, the bounds, errors that never
//! carry a value, and property tests that parsing never panics and round-trips.

use super::*;
use proptest::prelude::*;
use time::macros::datetime;

fn parse(text: &str) -> Expr {
    match Query::parse(text) {
        Ok(Query::Expr(e)) => e,
        other => panic!("{text:?} gave {other:?}"),
    }
}
fn fail(text: &str) -> QueryError {
    Query::parse(text).expect_err(text)
}
fn t(text: &str) -> Expr {
    parse(text)
}
fn range(from: Bound<OffsetDateTime>, to: Bound<OffsetDateTime>) -> TimeRange {
    TimeRange { from, to }
}
fn subtree(path: &str) -> Term {
    Term::Container(ContainerMatch::Subtree(Container::parse(path).unwrap()))
}

#[test]
fn every_field() {
    let uuid = "5f0c6a3e-1b2d-4c8e-9f00-0123456789ab";
    let u = Uuid::parse_str(uuid).unwrap();
    let cases = [
        ("id:tok_1", Term::Id("tok_1".into())),
        ("type:card_number", Term::Type(TokenType::CardNumber)),
        ("data:4242", Term::Data("4242".into())),
        ("fingerprint:AbC", Term::Fingerprint("AbC".into())),
        (
            "container:/PCI/high/",
            Term::Container(ContainerMatch::Exact(
                Container::parse("/pci/high/").unwrap(),
            )),
        ),
        (
            "metadata.Color:Red",
            Term::Metadata {
                key: "Color".into(),
                value: "Red".into(),
            },
        ),
        (&format!("created_by:{uuid}"), Term::CreatedBy(u)),
        (&format!("modified_by:\"{uuid}\""), Term::ModifiedBy(u)),
        (
            "created_at:2026-11-21T10:00:00Z",
            Term::CreatedAt(range(
                Bound::Included(datetime!(2026-11-21 10:00 UTC)),
                Bound::Included(datetime!(2026-11-21 10:00 UTC)),
            )),
        ),
        (
            "modified_at:\"2026-11-21T12:00:00+02:00\"",
            Term::ModifiedAt(range(
                Bound::Included(datetime!(2026-11-21 10:00 UTC)),
                Bound::Included(datetime!(2026-11-21 10:00 UTC)),
            )),
        ),
    ];
    for (text, term) in cases {
        assert_eq!(parse(text), Expr::Term(term), "{text}");
    }
    assert_eq!(fail("type:cardx").message, "not a known token type");
    assert_eq!(fail("created_by:nope").message, "not a UUID");
    assert_eq!(fail("metadata.:x").message, "unknown field");
    assert_eq!(fail(&format!("metadata.{}:x", "k".repeat(129))).position, 0);
    assert!(Query::parse(&format!("metadata.{}:x", "k".repeat(128))).is_ok());
}

#[test]
fn quoted_values_and_escapes() {
    assert_eq!(
        t(r#"data:"a b \"c\" \\ d""#),
        Expr::Term(Term::Data(r#"a b "c" \ d"#.into()))
    );
    assert_eq!(t(r#"id:"x:y)(""#), Expr::Term(Term::Id("x:y)(".into())));
    assert_eq!(
        fail(r#"data:"a\nb""#),
        QueryError {
            position: 7,
            message: "invalid escape in a quoted value".into()
        }
    );
    assert_eq!(fail(r#"data:"abc"#).message, "unterminated quoted value");
    assert_eq!(fail(r#"data:"abc\"#).position, 5);
    assert_eq!(fail(r#"data:"""#).message, "empty value");
    assert_eq!(fail("data:").message, "expected a value");
    assert_eq!(
        fail(r#"data:"a"b"#).message,
        "expected a space or `)` after the value"
    );
    assert_eq!(
        fail("data:a(b").message,
        "`(` in an unquoted value (quote the value)"
    );
    assert_eq!(t("created_at:\"2026-01-01\""), t("created_at:2026-01-01"));
    assert_eq!(t("container:\"/pci/*\""), Expr::Term(subtree("/pci/")));
}

#[test]
fn operators_and_precedence() {
    let (a, b, c) = (t("id:a"), t("id:b"), t("id:c"));
    let not = |e: &Expr| Expr::Not(Box::new(e.clone()));
    assert_eq!(
        t("id:a OR id:b AND id:c"),
        Expr::Or(vec![a.clone(), Expr::And(vec![b.clone(), c.clone()])])
    );
    assert_eq!(
        t("id:a AND id:b OR id:c"),
        Expr::Or(vec![Expr::And(vec![a.clone(), b.clone()]), c.clone()])
    );
    assert_eq!(
        t("id:a id:b  id:c"),
        Expr::And(vec![a.clone(), b.clone(), c.clone()])
    );
    assert_eq!(
        t("(id:a OR id:b) id:c"),
        Expr::And(vec![Expr::Or(vec![a.clone(), b.clone()]), c.clone()])
    );
    assert_eq!(
        t("id:a AND (id:b AND id:c)"),
        Expr::And(vec![a.clone(), b.clone(), c.clone()])
    );
    assert_eq!(t("-id:a"), not(&a));
    assert_eq!(t("NOT id:a id:b"), Expr::And(vec![not(&a), b.clone()]));
    assert_eq!(t("id:a NOT id:b"), Expr::And(vec![a.clone(), not(&b)]));
    assert_eq!(
        t("-(id:a OR id:b)"),
        not(&Expr::Or(vec![a.clone(), b.clone()]))
    );
    assert_eq!(t("NOT(id:a)"), not(&a));
    assert_eq!(t("NOT -id:a"), a);
    assert_eq!(t("NOT (NOT id:a)"), a);
    assert_eq!(t("id:a-b"), Expr::Term(Term::Id("a-b".into())));
    assert_eq!(fail("- id:a").position, 1);
    assert_eq!(fail("id:a OR").position, 7);
    assert_eq!(fail("AND id:a").message, "expected a term");
    assert_eq!(
        fail("id:a and id:b").message,
        "operators must be upper-case: `AND`, `OR`, `NOT`"
    );
    assert_eq!(fail("id:a and id:b").position, 5);
    assert_eq!(fail("AND:x").message, "unknown field");
    let e = t("id:a");
    assert_eq!(e.terms(), vec![&Term::Id("a".into())]);
}

#[test]
fn parentheses() {
    assert_eq!(
        fail("(id:a"),
        QueryError {
            position: 5,
            message: "expected `)`".into()
        }
    );
    assert_eq!(
        fail("id:a)"),
        QueryError {
            position: 4,
            message: "unexpected `)`".into()
        }
    );
    assert_eq!(fail("()").message, "expected a term");
    assert!(Query::parse(&format!("{}id:a{}", "(".repeat(10), ")".repeat(10))).is_ok());
    let deep = fail(&format!("{}id:a{}", "(".repeat(11), ")".repeat(11)));
    assert_eq!(
        (deep.position, deep.message.as_str()),
        (10, "parentheses nested more than 10 deep")
    );
    assert_eq!(fail(&"(".repeat(4000)).position, 10);
    assert_eq!(fail(&"-".repeat(4000)).position, 10);
    assert_eq!(
        fail(&"NOT ".repeat(1000)).message,
        "at most 10 `NOT` in a row"
    );
    assert_eq!(t(&format!("{}id:a", "NOT ".repeat(10))), t("id:a"));
    assert_eq!(t(&format!("{}id:a", "-".repeat(9))), t("-id:a"));
}

#[test]
fn containers() {
    assert_eq!(t("container:/pci/*"), Expr::Term(subtree("/pci/")));
    assert_eq!(t("container:*"), Expr::Term(subtree("/")));
    assert_eq!(
        fail("container:/pci*").message,
        "not a container: must start and end with '/'"
    );
    assert_eq!(
        fail("container:/p.ci/").message,
        "not a container: segments may only contain a-z, 0-9, '_' and '-'"
    );
    assert_eq!(t("container:\"/*\"").to_string(), "container:\"/*\"");
}

#[test]
fn dates_and_ranges() {
    use Bound::{Excluded as E, Included as I, Unbounded as U};
    let d1 = datetime!(2026-01-01 0:00 UTC);
    let d2 = datetime!(2026-01-02 0:00 UTC);
    let d3 = datetime!(2026-01-03 0:00 UTC);
    let at = |text: &str| match parse(text) {
        Expr::Term(Term::CreatedAt(r)) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(at("created_at:2026-01-01"), range(I(d1), E(d2)));
    assert_eq!(
        at("created_at:[2026-01-01 TO 2026-01-02]"),
        range(I(d1), E(d3))
    );
    assert_eq!(
        at("created_at:{2026-01-01 TO 2026-01-02}"),
        range(I(d2), E(d2))
    );
    assert_eq!(
        at("created_at:[2026-01-01 TO 2026-01-02}"),
        range(I(d1), E(d2))
    );
    assert_eq!(
        at("created_at:{2026-01-01 TO 2026-01-02]"),
        range(I(d2), E(d3))
    );
    let (i1, i2) = ("2026-01-01T10:00:00Z", "2026-01-02T10:00:00.5Z");
    let (t1, t2) = (
        datetime!(2026-01-01 10:00 UTC),
        datetime!(2026-01-02 10:00:00.5 UTC),
    );
    assert_eq!(
        at(&format!("created_at:[{i1} TO {i2}]")),
        range(I(t1), I(t2))
    );
    assert_eq!(
        at(&format!("created_at:{{{i1} TO {i2}}}")),
        range(E(t1), E(t2))
    );
    assert_eq!(
        at(&format!("created_at:[{i1} TO {i2}}}")),
        range(I(t1), E(t2))
    );
    assert_eq!(
        at(&format!("created_at:{{{i1} TO {i2}]")),
        range(E(t1), I(t2))
    );
    assert_eq!(at("created_at:[2026-01-01 TO *]"), range(I(d1), U));
    assert_eq!(at("created_at:{* TO 2026-01-01}"), range(U, E(d1)));
    assert_eq!(at("created_at:[ * TO * ]"), range(U, U));
    assert_eq!(
        at("created_at:[2026-01-01 TO 2026-01-01]").to_string(),
        "[2026-01-01T00:00:00Z TO 2026-01-02T00:00:00Z}"
    );
    assert_eq!(
        fail("created_at:[2026-01-01 to *]").message,
        "`TO` expected in a range"
    );
    assert_eq!(
        fail("created_at:[2026-01-01 TO *").message,
        "expected `]` or `}` to close the range"
    );
    assert_eq!(
        fail("created_at:[2026-13-01 TO *]"),
        QueryError {
            position: 12,
            message: "not a date".into()
        }
    );
    assert_eq!(fail("created_at:*").message, "not a date");
    assert_eq!(fail("created_at:2026-02-30").message, "not a date");
    assert_eq!(fail("created_at:9999-12-31").message, "date out of range");
    assert_eq!(
        fail("created_at:0000-01-01T00:00:00+01:00").message,
        "date out of range"
    );
    // Beyond year 9999 in UTC: refused, never a panic.
    assert!(Query::parse("created_at:9999-12-31T23:00:00-10:00").is_err());
    assert_eq!(
        fail("created_at:{9999-12-31 TO *]").message,
        "date out of range"
    );
    assert_eq!(
        fail("data:[a TO b]").message,
        "a range is allowed only on created_at and modified_at"
    );
}

#[test]
fn empty_and_limits() {
    assert_eq!(Query::parse(""), Ok(Query::All));
    assert_eq!(Query::parse(" \n\t "), Ok(Query::All));
    assert_eq!(Query::All.to_string(), "");
    let ten = ["id:a"; 10].join(" OR ");
    assert!(Query::parse(&ten).is_ok());
    let eleven = format!("{ten} OR id:b");
    assert_eq!(
        fail(&eleven),
        QueryError {
            position: ten.len() + 4,
            message: "at most 10 terms".into()
        }
    );
    assert_eq!(
        fail(&format!("data:{}", "x".repeat(MAX_QUERY_LEN))).position,
        0
    );
    let grows = format!("data:{}", "\\".repeat(3000));
    assert!(fail(&grows).message.ends_with("in canonical form"));
    assert!(
        fail("foo:bar")
            .to_string()
            .starts_with("at position 0: unknown field")
    );
}

#[test]
fn ids_and_fingerprints_hold_no_control_character() {
    for q in ["id:\"a\u{0}\"", "id:a\u{7}b", "fingerprint:\"x\ty\""] {
        let e = fail(q);
        assert!(e.to_string().contains("control character"), "{q:?}: {e}");
    }
    // A value searched by its blind index is hashed: a tab in it is the caller's own.
    assert!(Query::parse("data:\"a\tb\"").is_ok());
}

#[test]
fn errors_never_echo_values() {
    let secret = "4111111111111111";
    for q in [
        format!("data:{secret} and x"),
        secret.to_string(),
        format!("type:{secret}"),
        format!("created_by:{secret}"),
        format!("created_at:{secret}"),
        format!("container:{secret}"),
        format!("data:\"{secret}"),
        format!("data:\"{secret}\\x\""),
        format!("data:{secret}(x"),
        format!("data:[{secret} TO *]"),
        format!("created_at:[{secret} TO *]"),
        format!("created_at:[* TO {secret}]"),
        format!("data:{secret})"),
    ] {
        let e = fail(&q);
        assert!(!e.to_string().contains(secret), "{q}: {e}");
        assert!(!e.to_string().contains("4111"), "{q}: {e}");
    }
    let debug = format!("{:?}", parse(&format!("data:{secret} metadata.k:{secret}")));
    assert!(
        !debug.contains(secret) && debug.contains("<redacted>"),
        "{debug}"
    );
}

#[test]
fn position_counts_characters() {
    assert_eq!(fail("data:\"héé\" foo:x").position, 11);
    assert_eq!(fail("(data:é").position, 7);
}

fn term_strategy() -> impl Strategy<Value = Term> {
    let time = (-62_167_219_200i64..253_402_300_799, 0u32..1_000_000_000).prop_map(|(s, n)| {
        OffsetDateTime::from_unix_timestamp(s).unwrap() + time::Duration::nanoseconds(n.into())
    });
    let bound = prop_oneof![
        Just(Bound::Unbounded),
        time.clone().prop_map(Bound::Included),
        time.prop_map(Bound::Excluded),
    ];
    let range = (bound.clone(), bound).prop_map(|(from, to)| TimeRange { from, to });
    let value = "(?s).{1,12}";
    let container = (
        prop::collection::vec("[a-z0-9_-]{1,5}", 0..3),
        any::<bool>(),
    )
        .prop_map(|(segs, sub)| {
            let path = if segs.is_empty() {
                "/".to_string()
            } else {
                format!("/{}/", segs.join("/"))
            };
            let c = Container::parse(&path).unwrap();
            if sub {
                ContainerMatch::Subtree(c)
            } else {
                ContainerMatch::Exact(c)
            }
        });
    // An id or fingerprint never holds a control character (the parser refuses one).
    let plain = value.prop_filter("no control character", |v| !v.chars().any(char::is_control));
    prop_oneof![
        plain.clone().prop_map(Term::Id),
        prop::sample::select(TokenType::ALL.to_vec()).prop_map(Term::Type),
        value.prop_map(Term::Data),
        plain.prop_map(Term::Fingerprint),
        container.prop_map(Term::Container),
        ("[a-zA-Z0-9_.\\-*\\[{]{1,8}", value)
            .prop_map(|(key, value)| Term::Metadata { key, value }),
        any::<u128>().prop_map(|n| Term::CreatedBy(Uuid::from_u128(n))),
        any::<u128>().prop_map(|n| Term::ModifiedBy(Uuid::from_u128(n))),
        range.clone().prop_map(Term::CreatedAt),
        range.prop_map(Term::ModifiedAt),
    ]
}

fn normalize(e: Expr) -> Expr {
    match e {
        Expr::Term(_) => e,
        Expr::Not(inner) => normalize(*inner).negate(),
        Expr::And(items) => Expr::join(items.into_iter().map(normalize).collect(), true),
        Expr::Or(items) => Expr::join(items.into_iter().map(normalize).collect(), false),
    }
}

fn expr_strategy() -> impl Strategy<Value = Expr> {
    term_strategy()
        .prop_map(Expr::Term)
        .prop_recursive(4, 10, 3, |inner| {
            prop_oneof![
                inner.clone().prop_map(|e| Expr::Not(Box::new(e))),
                prop::collection::vec(inner.clone(), 2..4).prop_map(Expr::And),
                prop::collection::vec(inner, 2..4).prop_map(Expr::Or),
            ]
        })
        .prop_map(normalize)
        .prop_filter("at most 10 terms", |e| e.terms().len() <= MAX_TERMS)
}

fn round_trips(text: &str) -> Result<(), TestCaseError> {
    if let Ok(q) = Query::parse(text) {
        prop_assert_eq!(Query::parse(&q.to_string()), Ok(q));
    }
    Ok(())
}

proptest! {
    // No regression files: this helper must not add files to the crate.
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_and_round_trips(text in any::<String>()) {
        round_trips(&text)?;
    }

    #[test]
    fn grammar_alphabet_round_trips(text in "[a-z_.:()\\-\" *\\[\\]{}TONDAR/0-9\\\\]{0,80}") {
        round_trips(&text)?;
    }

    #[test]
    fn grammar_words_round_trip(text in "(( |-|NOT |\\(|\\))*(id|type|data|container|created_at|metadata\\.k):([a-z0-9/*:\\-]{0,5}|\"[a-z \\\\\"]{0,4}\"|\\[[0-9*\\-]{0,10} TO \\*\\])( AND | OR | and |\\)| )?\\)*){0,6}") {
        round_trips(&text)?;
    }

    #[test]
    fn valid_trees_round_trip(e in expr_strategy()) {
        let q = Query::Expr(e);
        prop_assert_eq!(Query::parse(&q.to_string()), Ok(q));
    }
}
