//! The kept token counts (`token_counts`, migration 12) that answer a list's `total_items`:
//! every way a token comes or goes is counted, the fast path is taken exactly when the total
//! depends on container and type alone, and it agrees with a count in SQL — on SQLite (through
//! its writer thread) and PostgreSQL, a fresh database each.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use time::Duration;
use tokenvault_domain::access::{ConditionAttribute, ConditionOperator, RuleCondition};
use tokenvault_domain::page::PageRequest;
use tokenvault_domain::ports::{TokenFilter, TokenRepository, Visibility};
use tokenvault_persistence::testing::{TestDatabase, backends};
use tokenvault_persistence::{SeaOrmTenantRepository, SeaOrmTokenRepository, counted_total};

mod common;

use common::{filter, now, tenant, token};

fn prefixes(p: &[&str]) -> Visibility {
    Visibility::Prefixes(p.iter().map(|s| (*s).to_string()).collect())
}

/// Rows of `token_counts` matching `condition`.
async fn count_rows(db: &DatabaseConnection, condition: &str) -> i64 {
    let sql = format!("SELECT COUNT(*) AS n FROM token_counts WHERE {condition}");
    let row = db
        .query_one_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .unwrap()
        .unwrap();
    row.try_get("", "n").unwrap()
}

#[tokio::test]
async fn kept_counts_follow_every_write_and_match_the_scan() {
    for backend in backends() {
        let db = TestDatabase::create(backend).await;
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let tokens = SeaOrmTokenRepository::new(db.db.clone());
        let a = tenant(&tenants).await;
        let b = tenant(&tenants).await;
        let base = now() - Duration::minutes(10);
        let counted = async |t, f: &TokenFilter| counted_total(&db.db, t, f, now()).await.unwrap();
        // The list's total (which uses the kept count) and a count in SQL of the same tokens
        // (an id filter forces the scan: every id the tenant could hold is named).
        let both = async |t, f: TokenFilter, every: &[&str]| {
            let page = PageRequest { page: 1, size: 1 };
            let kept = tokens.list(t, &f, page, now()).await.unwrap().total_items;
            let scan = TokenFilter {
                ids: every.iter().map(|s| (*s).to_string()).collect(),
                ..f
            };
            let scanned = tokens
                .list(t, &scan, page, now())
                .await
                .unwrap()
                .total_items;
            (kept, scanned)
        };

        // One at a time (the SQLite writer's group path) and in bulk.
        for (i, id, container) in [
            (0, "p1", "/pci/"),
            (1, "p2", "/pci/high/"),
            (2, "x1", "/pcix/"),
        ] {
            let t = token(a, id, container, base + Duration::seconds(i));
            tokens.insert(&t).await.unwrap();
        }
        let bulk: Vec<_> = (0..5)
            .map(|i| {
                let mut t = token(
                    a,
                    &format!("c{i}"),
                    "/bank/",
                    base + Duration::seconds(10 + i),
                );
                t.token_type = "card".into();
                t
            })
            .collect();
        tokens.insert_all(&bulk).await.unwrap();
        tokens
            .insert(&token(b, "other", "/pci/", base))
            .await
            .unwrap();
        let every = ["p1", "p2", "x1", "c0", "c1", "c2", "c3", "c4", "gone"];

        assert_eq!(counted(a, &filter()).await, Some(8));
        assert_eq!(counted(b, &filter()).await, Some(1), "per tenant");
        assert_eq!(both(a, filter(), &every).await, (8, 8));
        let pci = TokenFilter {
            visibility: prefixes(&["/pci/"]),
            ..filter()
        };
        assert_eq!(
            counted(a, &pci).await,
            Some(2),
            "/pci/ does not cover /pcix/"
        );
        assert_eq!(both(a, pci, &every).await, (2, 2));
        let cards = TokenFilter {
            types: vec!["card".into()],
            ..filter()
        };
        assert_eq!(both(a, cards, &every).await, (5, 5));

        // Deleted, moved to another container, expired (then removed by the expiry job).
        assert!(tokens.delete(a, "c0").await.unwrap());
        let mut moved = tokens.get(a, "x1", now()).await.unwrap().unwrap();
        moved.container = "/pci/low/".into();
        tokens.update(&moved).await.unwrap();
        let mut expiring = tokens.get(a, "c1", now()).await.unwrap().unwrap();
        expiring.expires_at = Some(now() + Duration::milliseconds(200));
        tokens.update(&expiring).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let pci = TokenFilter {
            visibility: prefixes(&["/pci/"]),
            ..filter()
        };
        assert_eq!(counted(a, &pci).await, Some(3), "x1 moved into /pci/");
        assert_eq!(
            counted(a, &filter()).await,
            Some(6),
            "c0 deleted, c1 expired"
        );
        assert_eq!(both(a, filter(), &every).await, (6, 6));
        assert!(tokens.delete_expired(now()).await.unwrap() >= 1);
        assert_eq!(
            counted(a, &filter()).await,
            Some(6),
            "removing the expired changes nothing"
        );
        // /pcix/ is empty now: the sweep drops rows that count nothing, so a tenant that
        // cycles through containers does not leave a row behind for each. On Citus a delete
        // subtracts on its backend's row, not on the one its insert added to (`citus.rs`):
        // there the rows left sum to nothing (at most 16 a container; docs/operations.md).
        if db.citus_workers().is_empty() {
            assert_eq!(count_rows(&db.db, "container = '/pcix/'").await, 0);
        } else {
            let rows = count_rows(&db.db, "container = '/pcix/'").await;
            assert!(rows <= 16, "{rows} rows");
            let pcix = TokenFilter {
                visibility: prefixes(&["/pcix/"]),
                ..filter()
            };
            assert_eq!(
                counted(a, &pcix).await,
                Some(0),
                "{rows} rows that cancel out"
            );
        }
        assert!(count_rows(&db.db, "container = '/bank/'").await > 0);

        // Not decided by container and type: no kept count, the scan answers.
        let session = TokenFilter {
            visibility: Visibility::Conditions(vec![vec![RuleCondition {
                attribute: ConditionAttribute::Id,
                operator: ConditionOperator::StartsWith,
                value: "p".into(),
            }]]),
            ..filter()
        };
        assert_eq!(counted(a, &session).await, None);
        let page = PageRequest { page: 1, size: 1 };
        assert_eq!(
            tokens
                .list(a, &session, page, now())
                .await
                .unwrap()
                .total_items,
            2
        );
        let by_meta = TokenFilter {
            metadata: vec![("run".into(), "r1".into())],
            ..filter()
        };
        assert_eq!(counted(a, &by_meta).await, None);

        // A deleted tenant leaves no count behind, and the other tenant keeps its own.
        assert!(common::delete_tenant(&tenants, a).await);
        assert_eq!(counted(a, &filter()).await, Some(0));
        assert_eq!(counted(b, &filter()).await, Some(1));
        assert_eq!(count_rows(&db.db, "1 = 1").await, 1, "only b's row is left");
        db.destroy().await;
    }
}
