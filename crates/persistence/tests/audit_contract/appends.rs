//! Appending to a tenant's chain: the head moves by compare-and-swap, entries that do not
//! follow it are refused, a large batch goes in whole, and any text round-trips.

use time::macros::datetime;
use tokenvault_domain::audit::AppendOutcome::{Appended, HeadMoved};
use tokenvault_domain::audit::AuditHead;
use tokenvault_domain::ports::AuditRepository;
use uuid::Uuid;

use crate::{each_backend, entries, head_of, seqs, whole_chain};

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
