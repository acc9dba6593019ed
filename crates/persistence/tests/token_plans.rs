//! Query plans of the token lists, asserted on both databases with the real statements: a
//! page costs the same however many tokens the tenant holds.

#![allow(clippy::unwrap_used)]

mod common;

use common::{filter, ids, now, on_one_shard, tenant, token};
use time::Duration;
use tokenvault_domain::page::PageRequest;
use tokenvault_domain::ports::{TokenRepository, Visibility};
use tokenvault_persistence::testing::{TestDatabase, backends};
use tokenvault_persistence::{SeaOrmTenantRepository, SeaOrmTokenRepository};

/// A page of children must cost the same however many tokens the tenant holds: the plan has to
/// start from the association index and fetch each child by its primary key, never walk the
/// tenant's tokens in page order (that made `GET /tokens/{parent}/children` O(newer tokens)).
#[tokio::test]
async fn a_children_page_starts_from_the_association_index() {
    for backend in backends() {
        let db = TestDatabase::create(backend).await;
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let tenant_id = tenant(&tenants).await;
        let tokens = SeaOrmTokenRepository::new(db.db.clone());
        let t0 = now() - Duration::hours(1);
        for id in ["p-1", "c-1", "c-2"] {
            tokens
                .insert(&token(tenant_id, id, "/pci/high/", t0))
                .await
                .unwrap();
        }
        for i in 0..50 {
            let newer = token(tenant_id, &format!("n-{i}"), "/pci/high/", now());
            tokens.insert(&newer).await.unwrap();
        }
        for child in ["c-1", "c-2"] {
            tokens.associate(tenant_id, "p-1", child).await.unwrap();
        }
        // Another parent with many children, so that statistics tell the parents apart.
        for i in 0..50 {
            let child = format!("n-{i}");
            tokens.associate(tenant_id, "c-1", &child).await.unwrap();
        }
        let mut children = filter();
        children.parent = Some("p-1".into());
        children.visibility = Visibility::Prefixes(vec!["/pci/".into()]);
        let plan = tokenvault_persistence::explain_list_page(&db.db, tenant_id, &children, now())
            .await
            .unwrap();
        on_one_shard(&plan);
        let text = plan.join("\n");
        let first_table = plan
            .iter()
            .filter(|l| !l.contains("Citus Adaptive"))
            .find(|l| l.contains("SEARCH") || l.contains("SCAN") || l.contains("Scan"))
            .unwrap();
        match backend {
            tokenvault_persistence::testing::Backend::Sqlite => {
                assert!(
                    first_table.starts_with("SEARCH token_associations USING")
                        && first_table.contains("(tenant_id=? AND parent_id=?)"),
                    "starts from the association index:\n{text}"
                );
                assert!(
                    text.contains("SEARCH tokens USING") && text.contains("(tenant_id=? AND id=?)"),
                    "children by primary key:\n{text}"
                );
                assert!(
                    !text.contains("SCAN tokens"),
                    "no walk over tokens:\n{text}"
                );
            }
            tokenvault_persistence::testing::Backend::Postgres => {
                assert!(
                    first_table.contains("on token_associations")
                        && first_table.contains("token_associations_pkey"),
                    "starts from the association index:\n{text}"
                );
                assert!(
                    text.contains("using tokens_pkey on tokens"),
                    "children by primary key:\n{text}"
                );
                assert!(!text.contains("idx_tokens_tenant_created"), "{text}");
            }
        }
        // And the page itself is right: both children, newest first.
        let mut f = filter();
        f.parent = Some("p-1".into());
        let page = tokens
            .list(tenant_id, &f, PageRequest { page: 1, size: 20 }, now())
            .await
            .unwrap();
        assert_eq!(page.total_items, 2);
        assert_eq!(page.items.len(), 2);
        db.destroy().await;
    }
}

/// Listing by `id` (at most 100 values) finds the rows by primary key instead of walking the
/// tenant's tokens in page order.
#[tokio::test]
async fn a_list_by_id_uses_the_primary_key() {
    for backend in backends() {
        let db = TestDatabase::create(backend).await;
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let tenant_id = tenant(&tenants).await;
        let tokens = SeaOrmTokenRepository::new(db.db.clone());
        for i in 0..60 {
            let t = token(tenant_id, &format!("t-{i}"), "/pci/high/", now());
            tokens.insert(&t).await.unwrap();
        }
        let mut by_id = filter();
        by_id.ids = vec!["t-1".into(), "t-7".into()];
        let plan = tokenvault_persistence::explain_list_page(&db.db, tenant_id, &by_id, now())
            .await
            .unwrap();
        on_one_shard(&plan);
        let text = plan.join("\n");
        match backend {
            tokenvault_persistence::testing::Backend::Sqlite => assert!(
                text.contains("sqlite_autoindex_tokens_1 (tenant_id=? AND id=?)"),
                "{text}"
            ),
            tokenvault_persistence::testing::Backend::Postgres => {
                assert!(text.contains("using tokens_pkey on tokens"), "{text}");
            }
        }
        let page = tokens
            .list(tenant_id, &by_id, PageRequest { page: 1, size: 20 }, now())
            .await
            .unwrap();
        assert_eq!(ids(&page).len(), 2);
        db.destroy().await;
    }
}

/// A deduplicated create looks its value up first: the lookup must search the fingerprint
/// index, never walk the tenant's tokens in creation order (a scan of the whole tenant on every
/// create of a new value).
#[tokio::test]
async fn a_fingerprint_lookup_searches_the_fingerprint_index() {
    for backend in backends() {
        let db = TestDatabase::create(backend).await;
        let tenant_id = tenant(&SeaOrmTenantRepository::new(db.db.clone())).await;
        let tokens = SeaOrmTokenRepository::new(db.db.clone());
        for i in 0..50 {
            let mut t = token(tenant_id, &format!("f-{i}"), "/", now());
            t.token_type = "card".into();
            t.fingerprint = Some(format!("FP-{}", i % 5));
            tokens.insert(&t).await.unwrap();
        }
        let plan = tokenvault_persistence::explain_fingerprint_lookup(&db.db, tenant_id, now())
            .await
            .unwrap();
        on_one_shard(&plan);
        assert!(
            plan.iter().any(|l| l.contains("idx_tokens_fingerprint")),
            "{backend:?}: {plan:#?}"
        );
        assert!(
            !plan.iter().any(|l| l.contains("idx_tokens_tenant_created")),
            "{backend:?}: {plan:#?}"
        );
        db.destroy().await;
    }
}
