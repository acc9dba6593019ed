//! Audit repository contract: the same stories on SQLite and PostgreSQL, fresh database each.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use time::macros::{datetime, offset};
use time::{Duration, OffsetDateTime};
use tokenvault_domain::audit::AppendOutcome::{Appended, HeadMoved, SeqTaken};
use tokenvault_domain::audit::{AuditEntry, AuditFilter, AuditHead, StoredEvent};
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::ports::AuditRepository;
use tokenvault_persistence::testing::{TestDatabase, backends};
use tokenvault_persistence::{SeaOrmAuditRepository, SeaOrmTenantRepository};
use uuid::Uuid;

mod common;

use common::{now, tenant};

struct Repos {
    db: DatabaseConnection,
    tenants: SeaOrmTenantRepository,
    audit: SeaOrmAuditRepository,
    tenant: Uuid,
}

async fn each_backend<F, Fut>(story: F)
where
    F: Fn(Repos) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for backend in backends() {
        let db = TestDatabase::create(backend).await;
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let tenant = tenant(&tenants).await;
        story(Repos {
            db: db.db.connection().clone(),
            tenants,
            audit: SeaOrmAuditRepository::new(db.db.clone()),
            tenant,
        })
        .await;
        db.destroy().await;
    }
}

/// Entry `seq` of `tenant_id`'s chain: a token created by an application at `created_at`.
fn entry(tenant_id: Uuid, seq: i64, created_at: OffsetDateTime) -> AuditEntry {
    AuditEntry {
        event: StoredEvent {
            id: Uuid::now_v7(),
            tenant_id,
            actor_type: "application".into(),
            actor_id: Some(Uuid::now_v7()),
            operation: "create".into(),
            entity_type: "token".into(),
            entity_id: format!("tok-{seq}"),
            trace_id: Some(format!("trace-{seq}")),
            created_at,
        },
        seq,
        hash: format!("h{seq}"),
    }
}

/// Entries `from..=to` of `tenant_id`'s chain, a millisecond apart.
fn entries(tenant_id: Uuid, from: i64, to: i64) -> Vec<AuditEntry> {
    let t = now();
    (from..=to)
        .map(|seq| entry(tenant_id, seq, t + Duration::milliseconds(seq)))
        .collect()
}

fn head_of(entries: &[AuditEntry]) -> AuditHead {
    let last = entries.last().unwrap();
    AuditHead {
        seq: last.seq,
        hash: last.hash.clone(),
    }
}

async fn whole_chain(audit: &SeaOrmAuditRepository, tenant_id: Uuid) -> Vec<AuditEntry> {
    audit.chain(tenant_id, 0, 1_000_000).await.unwrap()
}

fn seqs(entries: &[AuditEntry]) -> Vec<i64> {
    entries.iter().map(|e| e.seq).collect()
}

#[tokio::test]
async fn appends_compare_and_swap_the_head_and_the_chain_reads_back() {
    each_backend(|r| async move {
        let t = r.tenant;
        assert_eq!(r.audit.head(t).await.unwrap(), None);
        assert!(r.audit.tenants().await.unwrap().is_empty());
        assert!(whole_chain(&r.audit, t).await.is_empty());

        // Fields of every shape round-trip: no actor, no trace, other names, a long entity
        // id, a time with nanoseconds (kept to the microsecond) and another offset (an instant).
        let mut first = entries(t, 1, 3);
        first[0].event.actor_type = "system".into();
        first[0].event.actor_id = None;
        first[0].event.trace_id = None;
        first[1].event.actor_type = "unknown-actor".into();
        first[1].event.operation = "regenerate".into();
        first[1].event.entity_type = "application".into();
        first[1].event.entity_id = "é/".repeat(100);
        first[2].event.created_at = datetime!(2030-06-01 10:20:30.123_456_789 +02:00);
        first[2].hash = "3".repeat(44);
        assert_eq!(r.audit.append(t, None, &first).await.unwrap(), Appended);
        assert_eq!(r.audit.head(t).await.unwrap(), Some(head_of(&first)));
        let mut stored = first.clone();
        stored[2].event.created_at = datetime!(2030-06-01 08:20:30.123_456 UTC);
        assert_eq!(whole_chain(&r.audit, t).await, stored);
        assert_eq!(r.audit.tenants().await.unwrap(), vec![t]);

        // A stale head (none, an older entry, the right seq with another hash) moves nothing.
        let stale_seq = AuditHead {
            seq: 2,
            hash: "h2".into(),
        };
        let stale_hash = AuditHead {
            seq: 3,
            hash: "h3".into(),
        };
        for (expected, next) in [(None, 1), (Some(&stale_seq), 3), (Some(&stale_hash), 4)] {
            let more = entries(t, next, next + 1);
            assert_eq!(r.audit.append(t, expected, &more).await.unwrap(), HeadMoved);
            assert_eq!(r.audit.head(t).await.unwrap(), Some(head_of(&first)));
            assert_eq!(whole_chain(&r.audit, t).await, stored);
        }
        // Nothing to append: nothing written, whatever the head.
        assert_eq!(r.audit.append(t, None, &[]).await.unwrap(), Appended);
        assert_eq!(
            r.audit.append(t, Some(&stale_seq), &[]).await.unwrap(),
            Appended
        );
        assert_eq!(r.audit.head(t).await.unwrap(), Some(head_of(&first)));

        // The right head moves.
        let second = entries(t, 4, 5);
        assert_eq!(
            r.audit
                .append(t, Some(&head_of(&first)), &second)
                .await
                .unwrap(),
            Appended
        );
        assert_eq!(r.audit.head(t).await.unwrap(), Some(head_of(&second)));
        stored.extend(second);

        // Paging through the chain.
        assert_eq!(seqs(&r.audit.chain(t, 0, 2).await.unwrap()), [1, 2]);
        assert_eq!(r.audit.chain(t, 2, 2).await.unwrap(), stored[2..4]);
        assert_eq!(seqs(&r.audit.chain(t, 4, 2).await.unwrap()), [5]);
        assert!(r.audit.chain(t, 5, 2).await.unwrap().is_empty());
        assert!(r.audit.chain(t, 0, 0).await.unwrap().is_empty());
        assert_eq!(whole_chain(&r.audit, t).await, stored);
    })
    .await;
}

#[tokio::test]
async fn entries_that_do_not_follow_the_head_are_refused() {
    each_backend(|r| async move {
        let t = r.tenant;
        // A gap, a chain not starting at 1, another tenant's entry: errors, nothing written.
        let mut gap = entries(t, 1, 3);
        gap.remove(1);
        let mut foreign = entries(t, 1, 2);
        foreign[1].event.tenant_id = Uuid::now_v7();
        for bad in [gap, entries(t, 2, 3), foreign] {
            assert!(r.audit.append(t, None, &bad).await.is_err());
        }
        assert_eq!(r.audit.head(t).await.unwrap(), None);
        assert!(whole_chain(&r.audit, t).await.is_empty());
        // An unknown tenant has no chain to start.
        let ghost = Uuid::now_v7();
        assert!(
            r.audit
                .append(ghost, None, &entries(ghost, 1, 1))
                .await
                .is_err()
        );
        assert!(r.audit.tenants().await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn a_taken_place_after_a_vanished_head_is_a_broken_chain_and_rolls_back() {
    each_backend(|r| async move {
        let t = r.tenant;
        let first = entries(t, 1, 2);
        assert_eq!(r.audit.append(t, None, &first).await.unwrap(), Appended);
        // The head vanishes (as if never written): a new chain from 1 gets past the head but
        // not past the unique (tenant, seq), and leaves no head behind.
        r.db.execute_raw(Statement::from_string(
            r.db.get_database_backend(),
            "DELETE FROM audit_heads",
        ))
        .await
        .unwrap();
        assert_eq!(
            r.audit.append(t, None, &entries(t, 1, 1)).await.unwrap(),
            SeqTaken
        );
        assert_eq!(r.audit.head(t).await.unwrap(), None);
        assert_eq!(whole_chain(&r.audit, t).await, first);
    })
    .await;
}

/// A row just past the head (planted with the database's credentials, or the end of a head
/// moved back) takes the next entry's place. The head did not move, so no other appender is
/// racing: the append says the place is taken, writes nothing, and says so again on every try,
/// while a stale head still says the head moved.
#[tokio::test]
async fn a_row_beyond_an_unchanged_head_takes_the_place_and_says_so() {
    each_backend(|r| async move {
        let t = r.tenant;
        let first = entries(t, 1, 3);
        assert_eq!(r.audit.append(t, None, &first).await.unwrap(), Appended);
        // The head goes back onto entry 2: entry 3 now lies beyond it.
        r.db.execute_raw(Statement::from_string(
            r.db.get_database_backend(),
            "UPDATE audit_heads SET seq = 2, hash = 'h2'",
        ))
        .await
        .unwrap();
        let head = head_of(&first[..2]);
        for _ in 0..2 {
            let next = entries(t, 3, 4);
            assert_eq!(
                r.audit.append(t, Some(&head), &next).await.unwrap(),
                SeqTaken
            );
            assert_eq!(r.audit.head(t).await.unwrap(), Some(head.clone()));
            assert_eq!(whole_chain(&r.audit, t).await, first);
        }
        let stale = head_of(&first[..1]);
        assert_eq!(
            r.audit
                .append(t, Some(&stale), &entries(t, 2, 2))
                .await
                .unwrap(),
            HeadMoved
        );
        // Once the row is gone, the chain goes on from the head.
        r.db.execute_raw(Statement::from_string(
            r.db.get_database_backend(),
            "DELETE FROM audit_log WHERE seq = 3",
        ))
        .await
        .unwrap();
        let next = entries(t, 3, 4);
        assert_eq!(
            r.audit.append(t, Some(&head), &next).await.unwrap(),
            Appended
        );
        assert_eq!(r.audit.head(t).await.unwrap(), Some(head_of(&next)));
    })
    .await;
}

#[tokio::test]
async fn a_large_batch_is_appended_whole() {
    each_backend(|r| async move {
        let t = r.tenant;
        let batch = entries(t, 1, 1_234);
        assert_eq!(r.audit.append(t, None, &batch).await.unwrap(), Appended);
        assert_eq!(r.audit.head(t).await.unwrap(), Some(head_of(&batch)));
        assert_eq!(whole_chain(&r.audit, t).await, batch);
        // A batch whose last chunk collides is rolled back whole, head included.
        let mut next = entries(t, 1_235, 2_500);
        next.last_mut().unwrap().event.id = batch[0].event.id;
        assert!(
            r.audit
                .append(t, Some(&head_of(&batch)), &next)
                .await
                .is_err()
        );
        assert_eq!(r.audit.head(t).await.unwrap(), Some(head_of(&batch)));
        assert_eq!(whole_chain(&r.audit, t).await.len(), batch.len());
    })
    .await;
}

#[tokio::test]
async fn any_text_round_trips_and_a_refused_append_leaves_the_log_writable() {
    each_backend(|r| async move {
        let t = r.tenant;
        // Characters a text encoding would have to escape, in the fields a caller can shape.
        let mut first = entries(t, 1, 2);
        first[0].event.entity_id = "a\tb\nc\\N\r'\"|,;\u{7f}💳".into();
        first[0].event.trace_id = Some("\\.\n\\N\t".into());
        first[1].event.entity_id = "\\".into();
        first[1].event.trace_id = Some(String::new());
        assert_eq!(r.audit.append(t, None, &first).await.unwrap(), Appended);
        assert_eq!(whole_chain(&r.audit, t).await, first);

        // Refusals of every kind (a duplicate id, a value over its column's length where the
        // database checks lengths, a lost place), each followed by an append that lands:
        // nothing of the refused ones stays behind.
        let checks_lengths = r.db.get_database_backend() == sea_orm::DatabaseBackend::Postgres;
        let mut chain = first.clone();
        for round in (0..3_i64).filter(|&round| round != 1 || checks_lengths) {
            let head = head_of(&chain);
            let next = chain.last().unwrap().seq + 1;
            let mut refused = entries(t, next, next + 1);
            match round {
                0 => refused[1].event.id = chain[0].event.id,
                1 => refused[0].event.entity_id = "x".repeat(401),
                _ => {
                    let stale = AuditHead {
                        seq: head.seq,
                        hash: "another".into(),
                    };
                    assert_eq!(
                        r.audit.append(t, Some(&stale), &refused).await.unwrap(),
                        HeadMoved
                    );
                }
            }
            if round < 2 {
                assert!(r.audit.append(t, Some(&head), &refused).await.is_err());
            }
            assert_eq!(r.audit.head(t).await.unwrap(), Some(head.clone()));
            let landed = entries(t, next, next + 2);
            assert_eq!(
                r.audit.append(t, Some(&head), &landed).await.unwrap(),
                Appended
            );
            chain.extend(landed);
            assert_eq!(whole_chain(&r.audit, t).await, chain);
        }
    })
    .await;
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appenders_never_fork_the_chain() {
    each_backend(|r| async move {
        let t = r.tenant;
        let mut appenders = tokio::task::JoinSet::new();
        for i in 0..8 {
            let audit = r.audit.clone();
            appenders.spawn(async move {
                let id = Uuid::now_v7();
                let mut attempts = 0;
                loop {
                    attempts += 1;
                    assert!(attempts <= 100, "appender {i} never got in");
                    let head = audit.head(t).await.unwrap();
                    let seq = head.as_ref().map_or(0, |h| h.seq) + 1;
                    let mut e = entry(t, seq, now());
                    e.event.id = id;
                    e.hash = format!("h{seq}-{i}");
                    if audit.append(t, head.as_ref(), &[e]).await.unwrap() == Appended {
                        return id;
                    }
                }
            });
        }
        let mut ids = appenders.join_all().await;
        let chain = whole_chain(&r.audit, t).await;
        assert_eq!(seqs(&chain), (1..=8).collect::<Vec<_>>());
        let mut chained: Vec<Uuid> = chain.iter().map(|e| e.event.id).collect();
        ids.sort_unstable();
        chained.sort_unstable();
        assert_eq!(chained, ids);
        assert_eq!(r.audit.head(t).await.unwrap(), Some(head_of(&chain)));
    })
    .await;
}

#[tokio::test]
async fn deleting_the_tenant_removes_its_log() {
    each_backend(|r| async move {
        let other = tenant(&r.tenants).await;
        let mine = entries(r.tenant, 1, 3);
        let theirs = entries(other, 1, 2);
        assert_eq!(
            r.audit.append(r.tenant, None, &mine).await.unwrap(),
            Appended
        );
        assert_eq!(
            r.audit.append(other, None, &theirs).await.unwrap(),
            Appended
        );
        let mut both = vec![r.tenant, other];
        both.sort_unstable();
        assert_eq!(r.audit.tenants().await.unwrap(), both);

        assert!(common::delete_tenant(&r.tenants, r.tenant).await);
        assert_eq!(r.audit.head(r.tenant).await.unwrap(), None);
        assert!(whole_chain(&r.audit, r.tenant).await.is_empty());
        let listed = r
            .audit
            .list(r.tenant, &AuditFilter::default(), PageRequest::default())
            .await
            .unwrap();
        assert_eq!(listed.total_items, 0);
        assert_eq!(r.audit.tenants().await.unwrap(), vec![other]);
        assert_eq!(r.audit.head(other).await.unwrap(), Some(head_of(&theirs)));
        assert_eq!(whole_chain(&r.audit, other).await, theirs);
        let rows =
            r.db.query_one_raw(Statement::from_string(
                r.db.get_database_backend(),
                "SELECT COUNT(*) AS n FROM audit_log",
            ))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(rows.try_get::<i64>("", "n").unwrap(), 2);
    })
    .await;
}

#[tokio::test]
async fn a_tenant_deleted_while_its_log_is_appended_to_is_deleted() {
    // An append took the head's row lock, then waited on the tenant's row for its entries'
    // foreign key, while the tenant's delete held that row and waited on the head: a deadlock
    // that failed the delete. Appends now take the tenant's row first.
    each_backend(|r| async move {
        for _ in 0..20 {
            let t = tenant(&r.tenants).await;
            let first = entries(t, 1, 2);
            assert_eq!(r.audit.append(t, None, &first).await.unwrap(), Appended);
            let (head, next) = (head_of(&first), entries(t, 3, 40));
            let (appended, deleted) = tokio::join!(
                r.audit.append(t, Some(&head), &next),
                common::delete_tenant_purged(&r.tenants, t)
            );
            assert!(deleted.unwrap(), "the delete goes through");
            let _ = appended; // before the delete (then deleted with it) or refused
            assert_eq!(r.audit.head(t).await.unwrap(), None);
            assert!(whole_chain(&r.audit, t).await.is_empty());
        }
    })
    .await;
}
