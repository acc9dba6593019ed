//! Token lists in SQL: every filter, the visibility of rules and session conditions, totals
//! that count only visible tokens — on SQLite and PostgreSQL, a fresh database each.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::collections::BTreeMap;

use time::Duration;
use tokenvault_domain::access::{ConditionAttribute, ConditionOperator, RuleCondition};
use tokenvault_domain::page::PageRequest;
use tokenvault_domain::ports::{TokenFilter, TokenRepository, Visibility};

mod common;

use common::{each_backend, filter, ids, now, tenant, token};

#[tokio::test]
async fn list_filters_in_sql() {
    each_backend(|r| async move {
        let base = now() - Duration::minutes(10);
        let mut n = 0;
        let mut add = |id: &str, container: &str, ty: &str, run: &str| {
            n += 1;
            let mut t = token(r.tenant, id, container, base + Duration::seconds(n));
            t.token_type = ty.into();
            t.metadata = BTreeMap::from([
                ("run".to_string(), run.to_string()),
                ("odd key".to_string(), "x".to_string()),
            ]);
            t
        };
        let all = [
            add("t-pci", "/pci/high/", "card", "a"),
            add("t-pcix", "/pcix/", "token", "a"),
            add("t-und", "/a_b/", "token", "b"),
            add("t-axb", "/axb/", "token", "b"),
            add("t-bank", "/bank/low/", "bank", "a"),
        ];
        for t in &all {
            r.tokens.insert(t).await.unwrap();
        }
        let page = PageRequest { page: 1, size: 100 };
        let list = async |f: TokenFilter| r.tokens.list(r.tenant, &f, page, now()).await.unwrap();

        let everything = list(filter()).await;
        assert_eq!(
            ids(&everything),
            ["t-bank", "t-axb", "t-und", "t-pcix", "t-pci"],
            "newest first"
        );

        let pci = list(TokenFilter {
            visibility: Visibility::Prefixes(vec!["/pci/".into()]),
            ..filter()
        })
        .await;
        assert_eq!(ids(&pci), ["t-pci"], "/pci/ does not cover /pcix/");
        assert_eq!(pci.total_items, 1);
        let underscore = list(TokenFilter {
            visibility: Visibility::Prefixes(vec!["/a_b/".into()]),
            ..filter()
        })
        .await;
        assert_eq!(ids(&underscore), ["t-und"], "_ is not a wildcard");
        let none = list(TokenFilter {
            visibility: Visibility::Prefixes(vec![]),
            ..filter()
        })
        .await;
        assert_eq!(none.total_items, 0);
        let two = list(TokenFilter {
            visibility: Visibility::Prefixes(vec!["/pci/".into(), "/bank/".into()]),
            ..filter()
        })
        .await;
        assert_eq!(ids(&two), ["t-bank", "t-pci"]);

        let by_meta = list(TokenFilter {
            metadata: vec![("run".into(), "b".into())],
            ..filter()
        })
        .await;
        assert_eq!(ids(&by_meta), ["t-axb", "t-und"]);
        let odd_key = list(TokenFilter {
            metadata: vec![("odd key".into(), "x".into()), ("run".into(), "a".into())],
            ..filter()
        })
        .await;
        assert_eq!(odd_key.total_items, 3);
        let by_type = list(TokenFilter {
            types: vec!["card".into(), "bank".into()],
            ..filter()
        })
        .await;
        assert_eq!(ids(&by_type), ["t-bank", "t-pci"]);
        let by_id = list(TokenFilter {
            ids: vec!["t-und".into(), "nope".into()],
            ..filter()
        })
        .await;
        assert_eq!(ids(&by_id), ["t-und"]);

        let paged = r
            .tokens
            .list(r.tenant, &filter(), PageRequest { page: 2, size: 2 }, now())
            .await
            .unwrap();
        assert_eq!(ids(&paged), ["t-und", "t-pcix"]);
        assert_eq!(paged.total_items, 5);

        let other = tenant(&r.tenants).await;
        assert_eq!(
            r.tokens
                .list(other, &filter(), page, now())
                .await
                .unwrap()
                .total_items,
            0
        );
    })
    .await;
}

fn condition(
    attribute: ConditionAttribute,
    operator: ConditionOperator,
    value: &str,
) -> RuleCondition {
    RuleCondition {
        attribute,
        operator,
        value: value.into(),
    }
}

/// Session rules select tokens by id and container in the query: ids compare case-sensitively
/// (SQLite's `LIKE` would not), `_` and `%` are literal, clauses are ORed, conditions ANDed,
/// and a ceiling narrows with `Both`; totals count only what is shown.
#[tokio::test]
async fn session_conditions_filter_in_sql() {
    use ConditionAttribute::{Container, Id};
    use ConditionOperator::{Equals, StartsWith};
    each_backend(|r| async move {
        let base = now() - Duration::minutes(10);
        let all = [
            token(r.tenant, "Card-1", "/pci/", base + Duration::seconds(1)),
            token(r.tenant, "card-2", "/pci/", base + Duration::seconds(2)),
            token(r.tenant, "c_x", "/bank/", base + Duration::seconds(3)),
            token(r.tenant, "cAx", "/pci/high/", base + Duration::seconds(4)),
            token(r.tenant, "c%y", "/bank/", base + Duration::seconds(5)),
        ];
        for t in &all {
            r.tokens.insert(t).await.unwrap();
        }
        let page = PageRequest { page: 1, size: 100 };
        let list = async |v: Visibility| {
            let f = TokenFilter {
                visibility: v,
                ..filter()
            };
            r.tokens.list(r.tenant, &f, page, now()).await.unwrap()
        };
        let one = |conditions: Vec<RuleCondition>| Visibility::Conditions(vec![conditions]);

        let upper = list(one(vec![condition(Id, StartsWith, "Card")])).await;
        assert_eq!(ids(&upper), ["Card-1"], "ids are case-sensitive");
        assert_eq!(upper.total_items, 1);
        let exact = list(one(vec![condition(Id, Equals, "card-2")])).await;
        assert_eq!(ids(&exact), ["card-2"]);
        let underscore = list(one(vec![condition(Id, StartsWith, "c_")])).await;
        assert_eq!(ids(&underscore), ["c_x"], "_ is literal");
        let percent = list(one(vec![condition(Id, StartsWith, "c%")])).await;
        assert_eq!(ids(&percent), ["c%y"], "% is literal");
        let both_hold = list(one(vec![
            condition(Id, StartsWith, "c"),
            condition(Container, StartsWith, "/pci/"),
        ]))
        .await;
        assert_eq!(
            ids(&both_hold),
            ["cAx", "card-2"],
            "every condition must hold"
        );
        let container_equals = list(one(vec![condition(Container, Equals, "/pci/")])).await;
        assert_eq!(ids(&container_equals), ["card-2", "Card-1"]);
        let either = list(Visibility::Conditions(vec![
            vec![condition(Id, Equals, "Card-1")],
            vec![condition(Id, Equals, "c_x")],
        ]))
        .await;
        assert_eq!(ids(&either), ["c_x", "Card-1"]);
        assert_eq!(either.total_items, 2);
        let capped = list(Visibility::Both(
            Box::new(one(vec![condition(Id, StartsWith, "c")])),
            Box::new(Visibility::Prefixes(vec!["/bank/".into()])),
        ))
        .await;
        assert_eq!(ids(&capped), ["c%y", "c_x"], "the ceiling narrows");
        let nothing = list(Visibility::Conditions(vec![])).await;
        assert_eq!(nothing.total_items, 0);
        let nothing = list(Visibility::Both(
            Box::new(Visibility::All),
            Box::new(Visibility::Prefixes(vec![])),
        ))
        .await;
        assert_eq!(nothing.total_items, 0);
    })
    .await;
}
