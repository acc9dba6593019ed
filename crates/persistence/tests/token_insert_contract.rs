//! Token repository contract for inserting: dedup keys (unique per tenant, expired holders),
//! one id inserted at once, concurrent inserts each with their own answer, and all-or-nothing
//! batches — the same stories on SQLite and PostgreSQL, fresh database each.

use time::Duration;
use tokenvault_domain::page::PageRequest;
use tokenvault_domain::ports::{TokenRepository, TokenWrite};

mod common;

use common::{each_backend, filter, now, token};

#[tokio::test]
async fn dedup_key_is_unique_per_tenant_and_fingerprints_are_found() {
    each_backend(|r| async move {
        let mut a = token(r.tenant, "a-1", "/", now());
        a.fingerprint = Some("FP".into());
        a.dedup_key = Some("FP".into());
        let mut b = token(r.tenant, "b-1", "/", now());
        b.fingerprint = Some("FP".into());
        b.dedup_key = Some("FP".into());
        assert_eq!(r.tokens.insert(&a).await.unwrap(), TokenWrite::Done);
        assert_eq!(
            r.tokens.insert(&b).await.unwrap(),
            TokenWrite::DuplicateFingerprint
        );
        // The same dedup key in another container is another token (docs/decisions.md §6).
        let mut c = token(r.tenant, "c-1", "/other/", now());
        c.fingerprint = Some("FP".into());
        c.dedup_key = Some("FP".into());
        assert_eq!(r.tokens.insert(&c).await.unwrap(), TokenWrite::Done);
        // Without a dedup key equal fingerprints coexist.
        b.dedup_key = None;
        assert_eq!(r.tokens.insert(&b).await.unwrap(), TokenWrite::Done);
        let found = r
            .tokens
            .find_by_fingerprint(r.tenant, "token", "/", "FP", None, now())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.id, "a-1", "oldest first");
        let other = r
            .tokens
            .find_by_fingerprint(r.tenant, "token", "/other/", "FP", None, now())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(other.id, "c-1", "only its own container");
        assert!(
            r.tokens
                .find_by_fingerprint(r.tenant, "token", "/none/", "FP", None, now())
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            r.tokens
                .find_by_fingerprint(r.tenant, "card", "/", "FP", None, now())
                .await
                .unwrap()
                .is_none()
        );
        // A token made with an expression of its own matches only that expression.
        let mut own = token(r.tenant, "own-1", "/own/", now());
        own.fingerprint = Some("FP".into());
        own.fingerprint_expression = Some("{{ data }}".into());
        assert_eq!(r.tokens.insert(&own).await.unwrap(), TokenWrite::Done);
        let found = |expression: Option<&str>| {
            let tokens = r.tokens.clone();
            let expression = expression.map(str::to_string);
            async move {
                tokens
                    .find_by_fingerprint(r.tenant, "token", "/own/", "FP", expression, now())
                    .await
                    .unwrap()
                    .map(|t| t.id)
            }
        };
        assert_eq!(found(Some("{{ data }}")).await.as_deref(), Some("own-1"));
        assert_eq!(found(None).await, None, "never the default's match");
        assert_eq!(found(Some("{{data}}")).await, None);
    })
    .await;
}

#[tokio::test]
async fn expired_holders_of_a_dedup_key_are_deleted_on_demand() {
    each_backend(|r| async move {
        let past = now() - Duration::seconds(1);
        let mut expired = token(r.tenant, "old-1", "/", past - Duration::seconds(1));
        expired.fingerprint = Some("FP".into());
        expired.dedup_key = Some("FP".into());
        expired.expires_at = Some(past);
        let mut live = token(r.tenant, "live-1", "/other/", now());
        live.fingerprint = Some("FP".into());
        live.dedup_key = Some("FP".into());
        for t in [&expired, &live] {
            assert_eq!(r.tokens.insert(t).await.unwrap(), TokenWrite::Done);
        }
        let mut fresh = token(r.tenant, "new-1", "/", now());
        fresh.fingerprint = Some("FP".into());
        fresh.dedup_key = Some("FP".into());
        assert_eq!(
            r.tokens.insert(&fresh).await.unwrap(),
            TokenWrite::DuplicateFingerprint,
            "the index still holds the expired token"
        );
        let keys = [
            ("/".to_string(), "FP".to_string()),
            ("/other/".to_string(), "FP".to_string()),
        ];
        assert_eq!(
            r.tokens
                .delete_expired_holders(r.tenant, &keys, now())
                .await
                .unwrap(),
            1,
            "the expired one only"
        );
        assert_eq!(r.tokens.insert(&fresh).await.unwrap(), TokenWrite::Done);
        assert!(
            r.tokens
                .get(r.tenant, "live-1", now())
                .await
                .unwrap()
                .is_some()
        );
    })
    .await;
}

/// Times within one second whose fractions print at different widths (`.1`, `.12`, `.123`, none)
/// still order and expire as times, not as text.
#[tokio::test]
async fn one_id_inserted_at_once_is_stored_once() {
    each_backend(|r| async move {
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..40u8 {
            let mut t = token(r.tenant, "same", "/", now());
            t.data = vec![i];
            let tokens = r.tokens.clone();
            tasks.spawn(async move { (i, tokens.insert(&t).await.unwrap()) });
        }
        let answers = tasks.join_all().await;
        let winners: Vec<u8> = answers
            .iter()
            .filter(|(_, a)| *a == TokenWrite::Done)
            .map(|(i, _)| *i)
            .collect();
        assert_eq!(winners.len(), 1, "{answers:?}");
        assert!(
            answers
                .iter()
                .all(|(i, a)| *i == winners[0] || *a == TokenWrite::DuplicateId),
            "{answers:?}"
        );
        let stored = r
            .tokens
            .get(r.tenant, "same", now())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            stored.data,
            vec![winners[0]],
            "the stored row is the winner's"
        );
    })
    .await;
}

/// Concurrent single inserts (on SQLite committed together by the group writer) each get their
/// own answer: a duplicate id or dedup key in the same group fails alone, the rest are stored.
#[tokio::test]
async fn concurrent_inserts_each_get_their_own_answer() {
    each_backend(|r| async move {
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..60 {
            let mut t = token(r.tenant, &format!("c-{}", i % 50), "/", now());
            if i >= 55 {
                t.id = format!("d-{i}");
                t.fingerprint = Some("FP".into());
                t.dedup_key = Some("FP".into());
            }
            let tokens = r.tokens.clone();
            tasks.spawn(async move { (i, tokens.insert(&t).await.unwrap()) });
        }
        let mut answers = tasks.join_all().await;
        answers.sort_by_key(|(i, _)| *i);
        let count = |w: TokenWrite| answers.iter().filter(|(_, a)| *a == w).count();
        assert_eq!(count(TokenWrite::Done), 51, "{answers:?}");
        assert_eq!(count(TokenWrite::DuplicateId), 5, "{answers:?}");
        assert_eq!(count(TokenWrite::DuplicateFingerprint), 4, "{answers:?}");
        let page = PageRequest { page: 1, size: 100 };
        let stored = r
            .tokens
            .list(r.tenant, &filter(), page, now())
            .await
            .unwrap();
        assert_eq!(stored.total_items, 51);
        // A group without conflicts goes in as one statement.
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..20 {
            let t = token(r.tenant, &format!("e-{i}"), "/", now());
            let tokens = r.tokens.clone();
            tasks.spawn(async move { tokens.insert(&t).await.unwrap() });
        }
        assert!(
            tasks
                .join_all()
                .await
                .iter()
                .all(|a| *a == TokenWrite::Done)
        );
        let stored = r
            .tokens
            .list(r.tenant, &filter(), page, now())
            .await
            .unwrap();
        assert_eq!(stored.total_items, 71);
        // Rows of a tenant that does not exist (deleted meanwhile) in the same groups: each of
        // them is answered Missing, the others are stored.
        let ghost = uuid::Uuid::new_v4();
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..20 {
            let owner = if i % 2 == 0 { r.tenant } else { ghost };
            let t = token(owner, &format!("g-{i}"), "/", now());
            let tokens = r.tokens.clone();
            tasks.spawn(async move { (i, tokens.insert(&t).await.unwrap()) });
        }
        for (i, answer) in tasks.join_all().await {
            let expected = if i % 2 == 0 {
                TokenWrite::Done
            } else {
                TokenWrite::Missing
            };
            assert_eq!(answer, expected, "g-{i}");
        }
        assert!(
            r.tokens
                .get(r.tenant, "e-19", now())
                .await
                .unwrap()
                .is_some()
        );
    })
    .await;
}

#[tokio::test]
async fn insert_all_is_all_or_nothing() {
    each_backend(|r| async move {
        r.tokens
            .insert(&token(r.tenant, "taken", "/", now()))
            .await
            .unwrap();
        let batch = vec![
            token(r.tenant, "n-1", "/", now()),
            token(r.tenant, "taken", "/", now()),
        ];
        assert_eq!(
            r.tokens.insert_all(&batch).await.unwrap(),
            TokenWrite::DuplicateId
        );
        assert!(
            r.tokens
                .get(r.tenant, "n-1", now())
                .await
                .unwrap()
                .is_none()
        );
        let ok = vec![
            token(r.tenant, "n-1", "/", now()),
            token(r.tenant, "n-2", "/", now()),
        ];
        assert_eq!(r.tokens.insert_all(&ok).await.unwrap(), TokenWrite::Done);
        let many = r
            .tokens
            .get_many(
                r.tenant,
                &["n-1".into(), "n-2".into(), "none".into()],
                now(),
            )
            .await
            .unwrap();
        assert_eq!(many.len(), 2);
    })
    .await;
}

/// Two batches that hold the same containers in opposite orders, again and again at once: each
/// is stored whole. On PostgreSQL the count triggers take a statement's counter rows in key
/// order; a batch written as several statements in one transaction could hold one
/// container's counters while it waits for the other's, and a batch in the opposite order
/// the reverse — a deadlock that fails one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_batches_over_the_same_containers_never_deadlock() {
    each_backend(|r| async move {
        let batch = |round: usize, side: &str, first: &str, second: &str| -> Vec<_> {
            (0..400)
                .map(|i| {
                    let container = if i < 200 { first } else { second };
                    token(r.tenant, &format!("{side}-{round}-{i}"), container, now())
                })
                .collect()
        };
        for round in 0..5 {
            let left = batch(round, "l", "/a/", "/b/");
            let right = batch(round, "r", "/b/", "/a/");
            let (l, r2) = tokio::join!(r.tokens.insert_all(&left), r.tokens.insert_all(&right));
            assert_eq!(l.unwrap(), TokenWrite::Done, "round {round}");
            assert_eq!(r2.unwrap(), TokenWrite::Done, "round {round}");
        }
        let counted = r
            .tokens
            .list(r.tenant, &filter(), PageRequest { page: 1, size: 1 }, now())
            .await
            .unwrap();
        assert_eq!(counted.total_items, 4000);
    })
    .await;
}

/// Two batches that hold the same dedup keys in opposite orders, at once: one is stored, the
/// other is told of the duplicate — never a failure. (On PostgreSQL each waits on the other's
/// uncommitted index entries; in opposite orders that was a deadlock, a 500 for its client.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_with_the_same_dedup_keys_in_opposite_orders_never_deadlock() {
    each_backend(|r| async move {
        for round in 0..5 {
            let batch = |side: &str, reversed: bool| -> Vec<_> {
                let mut keys: Vec<usize> = (0..200).collect();
                if reversed {
                    keys.reverse();
                }
                keys.iter()
                    .map(|k| {
                        let mut t = token(r.tenant, &format!("{side}-{round}-{k}"), "/", now());
                        t.fingerprint = Some(format!("FP-{round}-{k}"));
                        t.dedup_key = t.fingerprint.clone();
                        t
                    })
                    .collect()
            };
            let (left, right) = (batch("l", false), batch("r", true));
            let (l, rr) = tokio::join!(r.tokens.insert_all(&left), r.tokens.insert_all(&right));
            let mut outcomes = [l.unwrap(), rr.unwrap()];
            outcomes.sort_by_key(|o| format!("{o:?}"));
            assert_eq!(
                outcomes,
                [TokenWrite::Done, TokenWrite::DuplicateFingerprint],
                "round {round}"
            );
        }
    })
    .await;
}

/// Single inserts (committed together by the group writer) and a batch that hold the same
/// dedup keys in opposite orders, at once: either the batch is stored and every single is told
/// of the duplicate, or the batch is refused and every single is stored — never a failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_inserts_and_a_batch_over_the_same_dedup_keys_never_deadlock() {
    each_backend(|r| async move {
        for round in 0..5 {
            let make = |side: &str, k: usize| {
                let mut t = token(r.tenant, &format!("{side}-{round}-{k}"), "/", now());
                t.fingerprint = Some(format!("FP-{round}-{k}"));
                t.dedup_key = t.fingerprint.clone();
                t
            };
            let singles: Vec<_> = (0..100)
                .rev()
                .map(|k| {
                    let tokens = r.tokens.clone();
                    let single = make("s", k);
                    tokio::spawn(async move { tokens.insert(&single).await })
                })
                .collect();
            let batch: Vec<_> = (0..100).map(|k| make("b", k)).collect();
            let whole = r.tokens.insert_all(&batch).await.unwrap();
            let mut stored = 0;
            for single in singles {
                match single.await.unwrap().unwrap() {
                    TokenWrite::Done => stored += 1,
                    TokenWrite::DuplicateFingerprint => {}
                    other => panic!("round {round}: {other:?}"),
                }
            }
            match whole {
                TokenWrite::Done => assert_eq!(stored, 0, "round {round}"),
                TokenWrite::DuplicateFingerprint => assert_eq!(stored, 100, "round {round}"),
                other => panic!("round {round}: {other:?}"),
            }
        }
    })
    .await;
}
