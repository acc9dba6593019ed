//! Who takes a place in the chain: a place taken behind the head (`SeqTaken`) and appenders
//! racing for the head, which never fork the chain.

use sea_orm::{ConnectionTrait, Statement};
use tokenvault_domain::audit::AppendOutcome::{Appended, HeadMoved, SeqTaken};
use tokenvault_domain::ports::AuditRepository;
use uuid::Uuid;

use crate::common::now;
use crate::{each_backend, entries, entry, head_of, seqs, whole_chain};

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
