//! Listing a tenant's entries: newest first, paged, filtered by entity and by time.

use time::macros::{datetime, offset};
use time::{Duration, OffsetDateTime};
use tokenvault_domain::audit::AppendOutcome::Appended;
use tokenvault_domain::audit::{AuditEntry, AuditFilter};
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::ports::AuditRepository;
use uuid::Uuid;

use crate::common::tenant;
use crate::{Repos, each_backend, entry, seqs};

/// A whole second, so that entries within it test sub-second comparisons.
const T0: OffsetDateTime = datetime!(2030-01-01 12:00:05 UTC);

/// The tenant's list entries: (entity type, entity id, microseconds after [`T0`]), by seq.
const LISTED: [(&str, &str, i64); 7] = [
    ("token", "a", -10_000_000),
    ("token", "b", 0),
    ("proxy", "p", 500_000),
    ("token", "a", 500_000),
    ("application", "x", 123_456),
    ("token", "a", 2_000_000),
    ("token", "c", -5_000_000),
];

async fn listed(r: &Repos, tenant_id: Uuid) -> Vec<AuditEntry> {
    let stored: Vec<AuditEntry> = LISTED
        .iter()
        .zip(1..)
        .map(|(&(entity_type, entity_id, micros), seq)| {
            let mut e = entry(tenant_id, seq, T0 + Duration::microseconds(micros));
            e.event.entity_type = entity_type.into();
            e.event.entity_id = entity_id.into();
            e
        })
        .collect();
    assert_eq!(
        r.audit.append(tenant_id, None, &stored).await.unwrap(),
        Appended
    );
    stored
}

async fn list(r: &Repos, filter: &AuditFilter, page: u64, size: u64) -> Page<AuditEntry> {
    r.audit
        .list(r.tenant, filter, PageRequest { page, size })
        .await
        .unwrap()
}

/// The seqs of the tenant's entries matching `filter` (one page of 100) and the total.
async fn matching(r: &Repos, filter: &AuditFilter) -> (Vec<i64>, u64) {
    let page = list(r, filter, 1, 100).await;
    (seqs(&page.items), page.total_items)
}

#[tokio::test]
async fn list_filters_and_pages_newest_first() {
    each_backend(|r| async move {
        let stored = listed(&r, r.tenant).await;
        // Another tenant with the same entities, at the same times: never listed.
        let other = tenant(&r.tenants).await;
        listed(&r, other).await;

        let all = AuditFilter::default();
        // By time, newest first, ties by seq, newest first.
        let newest_first = [6, 4, 3, 5, 2, 7, 1];
        assert_eq!(matching(&r, &all).await, (newest_first.to_vec(), 7));
        let first = list(&r, &all, 1, 3).await;
        assert_eq!(
            first.items,
            [stored[5].clone(), stored[3].clone(), stored[2].clone()]
        );
        assert_eq!((first.total_items, first.total_pages()), (7, 3));
        assert_eq!(first.request, PageRequest { page: 1, size: 3 });
        assert_eq!(seqs(&list(&r, &all, 2, 3).await.items), [5, 2, 7]);
        assert_eq!(seqs(&list(&r, &all, 3, 3).await.items), [1]);
        let beyond = list(&r, &all, 4, 3).await;
        assert!(beyond.items.is_empty());
        assert_eq!(beyond.total_items, 7);

        let by = |entity_type: Option<&str>, entity_id: Option<&str>| AuditFilter {
            entity_type: entity_type.map(Into::into),
            entity_id: entity_id.map(Into::into),
            ..AuditFilter::default()
        };
        assert_eq!(
            matching(&r, &by(Some("token"), None)).await,
            (vec![6, 4, 2, 7, 1], 5)
        );
        assert_eq!(matching(&r, &by(None, Some("a"))).await, (vec![6, 4, 1], 3));
        assert_eq!(
            matching(&r, &by(Some("token"), Some("a"))).await,
            (vec![6, 4, 1], 3)
        );
        assert_eq!(
            matching(&r, &by(Some("proxy"), Some("a"))).await,
            (vec![], 0)
        );
        assert_eq!(matching(&r, &by(Some("tok"), None)).await, (vec![], 0));
        let a_tokens = list(&r, &by(Some("token"), Some("a")), 2, 2).await;
        assert_eq!((seqs(&a_tokens.items), a_tokens.total_items), (vec![1], 3));

        // Date bounds are inclusive and exact to the microsecond, whatever the offset.
        let between = |start: Option<OffsetDateTime>, end: Option<OffsetDateTime>| AuditFilter {
            start,
            end,
            ..AuditFilter::default()
        };
        let half = T0 + Duration::milliseconds(500);
        assert_eq!(
            matching(&r, &between(Some(T0), None)).await,
            (vec![6, 4, 3, 5, 2], 5)
        );
        assert_eq!(
            matching(&r, &between(Some(T0.to_offset(offset!(-5))), None)).await,
            (vec![6, 4, 3, 5, 2], 5)
        );
        assert_eq!(
            matching(&r, &between(None, Some(T0))).await,
            (vec![2, 7, 1], 3)
        );
        assert_eq!(
            matching(&r, &between(Some(T0), Some(half))).await,
            (vec![4, 3, 5, 2], 4)
        );
        assert_eq!(
            matching(&r, &between(Some(half), Some(half))).await,
            (vec![4, 3], 2)
        );
        assert_eq!(
            matching(
                &r,
                &between(
                    Some(T0 + Duration::microseconds(1)),
                    Some(half - Duration::microseconds(1))
                )
            )
            .await,
            (vec![5], 1)
        );
        assert_eq!(
            matching(&r, &between(Some(half), Some(T0))).await,
            (vec![], 0)
        );
        // Every filter at once.
        let all_of = AuditFilter {
            entity_type: Some("token".into()),
            entity_id: Some("a".into()),
            start: Some(T0 - Duration::seconds(10)),
            end: Some(half),
        };
        assert_eq!(matching(&r, &all_of).await, (vec![4, 1], 2));

        // The other tenant sees its own only.
        let theirs = r
            .audit
            .list(other, &all, PageRequest::default())
            .await
            .unwrap();
        assert_eq!(theirs.total_items, 7);
        assert!(theirs.items.iter().all(|e| e.event.tenant_id == other));
    })
    .await;
}
