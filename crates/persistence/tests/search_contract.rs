//! `TokenRepository::search` on both databases: blind index terms written with the row by every
//! insert path and by updates, gone with the token, looked up through an index, and the
//! visibility and liveness of a list.

#![allow(clippy::unwrap_used)]

mod common;

use std::ops::Bound;

use common::{ids, now, tenant, token};
use time::Duration;
use tokenvault_domain::page::PageRequest;
use tokenvault_domain::ports::{SearchCondition, TokenRepository, TokenWrite, Visibility};
use tokenvault_domain::search_query::TimeRange;
use tokenvault_domain::token::StoredToken;
use tokenvault_persistence::testing::{Backend, TestDatabase, backends};
use tokenvault_persistence::{SeaOrmTenantRepository, SeaOrmTokenRepository};
use uuid::Uuid;

const PAGE: PageRequest = PageRequest { page: 1, size: 20 };

fn with_terms(mut t: StoredToken, terms: &[&str]) -> StoredToken {
    t.search_terms = terms.iter().map(|s| (*s).to_string()).collect();
    t.search_indexes = vec!["{{ data }}".into()];
    t
}

fn term(t: &str) -> SearchCondition {
    SearchCondition::Term(t.into())
}

async fn found(
    tokens: &SeaOrmTokenRepository,
    tenant_id: Uuid,
    c: Option<SearchCondition>,
    visibility: &Visibility,
) -> (Vec<String>, u64) {
    let page = tokens
        .search(tenant_id, c, visibility, PAGE, now())
        .await
        .unwrap();
    let list = ids(&page).iter().map(|s| (*s).to_string()).collect();
    (list, page.total_items)
}

#[tokio::test]
async fn terms_are_written_with_the_row_and_found_through_an_index() {
    for backend in backends() {
        let db = TestDatabase::create(backend).await;
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let tenant_id = tenant(&tenants).await;
        let other_tenant = tenant(&tenants).await;
        let tokens = SeaOrmTokenRepository::new(db.db.clone());
        let t0 = now() - Duration::hours(1);
        // One row through the group writer, two through the batch insert.
        let a = with_terms(token(tenant_id, "a", "/pii/high/", t0), &["T1", "T2"]);
        assert_eq!(tokens.insert(&a).await.unwrap(), TokenWrite::Done);
        let b = with_terms(token(tenant_id, "b", "/pci/high/", now()), &["T2"]);
        let c = token(tenant_id, "c", "/pii/high/", now());
        assert_eq!(tokens.insert_all(&[b, c]).await.unwrap(), TokenWrite::Done);
        let theirs = with_terms(token(other_tenant, "a", "/pii/high/", now()), &["T1"]);
        tokens.insert(&theirs).await.unwrap();
        let all = Visibility::All;
        assert_eq!(
            found(&tokens, tenant_id, Some(term("T1")), &all).await,
            (vec!["a".into()], 1)
        );
        assert_eq!(
            found(&tokens, tenant_id, Some(term("T2")), &all).await,
            (vec!["b".into(), "a".into()], 2),
            "newest first"
        );
        // NOT is the complement: the token without terms matches NOT T1.
        let not_t1 = SearchCondition::Not(Box::new(term("T1")));
        assert_eq!(found(&tokens, tenant_id, Some(not_t1), &all).await.1, 2);
        // Visibility in the same statement, total included.
        let pii = Visibility::Prefixes(vec!["/pii/".into()]);
        assert_eq!(
            found(&tokens, tenant_id, Some(term("T2")), &pii).await,
            (vec!["a".into()], 1)
        );
        assert_eq!(
            found(&tokens, tenant_id, None, &Visibility::Prefixes(vec![]))
                .await
                .1,
            0
        );
        // Other conditions.
        let under = SearchCondition::ContainerUnder("/pii/".into());
        assert_eq!(found(&tokens, tenant_id, Some(under), &all).await.1, 2);
        let early = SearchCondition::CreatedAt(TimeRange {
            from: Bound::Unbounded,
            to: Bound::Excluded(now() - Duration::minutes(30)),
        });
        assert_eq!(
            found(&tokens, tenant_id, Some(early), &all).await,
            (vec!["a".into()], 1)
        );
        let never_modified = SearchCondition::ModifiedAt(TimeRange {
            from: Bound::Unbounded,
            to: Bound::Unbounded,
        });
        assert_eq!(
            found(&tokens, tenant_id, Some(never_modified), &all)
                .await
                .1,
            0
        );
        // An update replaces the terms; a delete takes them.
        let mut changed = tokens.get(tenant_id, "a", now()).await.unwrap().unwrap();
        assert_eq!(changed.search_terms, ["T1", "T2"]);
        changed.search_terms = vec!["T3".into()];
        assert_eq!(tokens.update(&changed).await.unwrap(), TokenWrite::Done);
        assert_eq!(found(&tokens, tenant_id, Some(term("T1")), &all).await.1, 0);
        assert_eq!(found(&tokens, tenant_id, Some(term("T3")), &all).await.1, 1);
        assert!(tokens.delete(tenant_id, "a").await.unwrap());
        assert_eq!(found(&tokens, tenant_id, Some(term("T3")), &all).await.1, 0);
        if backend == Backend::Sqlite {
            // The terms table holds the other rows' terms only: none was left behind.
            assert_eq!(
                db.execute("DELETE FROM token_search_terms WHERE term = 'T3'")
                    .await,
                0
            );
        }
        // The plan looks the term up in an index, not through the tenant's tokens: with
        // enough of them for the planner to tell (each holding terms of its own).
        for chunk in 0..3 {
            let filler: Vec<StoredToken> = (0..1000)
                .map(|i| {
                    let id = format!("f-{chunk}-{i}");
                    let own = format!("F{chunk}-{i}");
                    with_terms(
                        token(tenant_id, &id, "/pii/high/", now()),
                        &[&own, "COMMON"],
                    )
                })
                .collect();
            assert_eq!(tokens.insert_all(&filler).await.unwrap(), TokenWrite::Done);
        }
        // A term 3,000 tokens hold and one a single token holds: the same page either way
        // (SQLite reads more than a thousand matches off the calling thread).
        let (common_page, common_total) =
            found(&tokens, tenant_id, Some(term("COMMON")), &all).await;
        assert_eq!(common_total, 3000);
        assert_eq!(common_page.len(), usize::try_from(PAGE.size).unwrap());
        assert_eq!(
            found(&tokens, tenant_id, Some(term("F2-999")), &all).await,
            (vec!["f-2-999".to_string()], 1)
        );
        let plan =
            tokenvault_persistence::explain_search_page(&db.db, tenant_id, &term("T2"), now())
                .await
                .unwrap();
        common::on_one_shard(&plan);
        let plan = plan.join("\n");
        match backend {
            Backend::Sqlite => assert!(
                plan.contains(
                    "SEARCH token_search_terms USING PRIMARY KEY (tenant_id=? AND term=?)"
                ),
                "{plan}"
            ),
            Backend::Postgres => assert!(plan.contains("idx_tokens_search_terms"), "{plan}"),
        }
        // An id is looked up under the tenant, in the primary key: never through every
        // tenant's ids, alone or beside a term.
        for condition in [
            SearchCondition::Id("f-1-5".into()),
            SearchCondition::Any(vec![SearchCondition::Id("f-1-5".into()), term("T2")]),
        ] {
            let plan =
                tokenvault_persistence::explain_search_page(&db.db, tenant_id, &condition, now())
                    .await
                    .unwrap();
            common::on_one_shard(&plan);
            let plan = plan.join("\n");
            // SQLite: each read of `tokens` by an index of the tenant's; PostgreSQL: each
            // index condition on an id with the tenant beside it.
            let under_the_tenant = match backend {
                Backend::Sqlite => {
                    let on_tokens: Vec<&str> =
                        plan.lines().filter(|l| l.contains(" tokens ")).collect();
                    !on_tokens.is_empty()
                        && on_tokens.iter().all(|l| {
                            l.starts_with("SEARCH tokens USING") && l.contains("(tenant_id=?")
                        })
                }
                Backend::Postgres => {
                    let on_ids: Vec<&str> = plan
                        .lines()
                        .filter(|l| l.contains("Index Cond") && l.contains("(id)::text ="))
                        .collect();
                    !on_ids.is_empty() && on_ids.iter().all(|l| l.contains("tenant_id ="))
                }
            };
            assert!(under_the_tenant, "{condition:?}: {plan}");
        }
        db.destroy().await;
    }
}
