//! Token repository contract: the same stories on SQLite and PostgreSQL, fresh database each.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use time::Duration;
use tokenvault_domain::page::PageRequest;
use tokenvault_domain::ports::{TenantRepository, TokenFilter, TokenRepository, TokenWrite};
use tokenvault_domain::token::StoredToken;
use uuid::Uuid;

mod common;

use common::{each_backend, filter, ids, now, tenant, token};

#[tokio::test]
async fn insert_get_update_delete() {
    each_backend(|r| async move {
        let t = token(r.tenant, "tok-1", "/general/high/", now());
        assert_eq!(r.tokens.insert(&t).await.unwrap(), TokenWrite::Done);
        assert_eq!(
            r.tokens
                .get(r.tenant, "tok-1", now())
                .await
                .unwrap()
                .unwrap(),
            t
        );
        assert_eq!(r.tokens.insert(&t).await.unwrap(), TokenWrite::DuplicateId);
        // The same id in another tenant is another token.
        let other = tenant(&r.tenants).await;
        assert_eq!(
            r.tokens
                .insert(&token(other, "tok-1", "/", now()))
                .await
                .unwrap(),
            TokenWrite::Done
        );
        assert!(
            r.tokens
                .get(other, "tok-1", now())
                .await
                .unwrap()
                .unwrap()
                .container
                == "/"
        );

        let mut changed = t.clone();
        changed.container = "/general/low/".into();
        changed.data = vec![1, 2, 3];
        changed.mask = Some(vec![9]);
        changed.metadata.insert("k".into(), "v".into());
        changed.modified_at = Some(now());
        changed.deduplicate = Some(false);
        assert_eq!(r.tokens.update(&changed).await.unwrap(), TokenWrite::Done);
        let read = r
            .tokens
            .get(r.tenant, "tok-1", now())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(read.version, 1, "every update moves the version on");
        assert_eq!(
            read,
            StoredToken {
                version: 1,
                ..changed.clone()
            }
        );
        // A write over a version that is no longer the row's changes nothing (a concurrent
        // PATCH came first): reported as `Missing`, the row as the first write left it.
        let mut stale = changed.clone();
        stale.container = "/".into();
        assert_eq!(r.tokens.update(&stale).await.unwrap(), TokenWrite::Missing);
        assert_eq!(
            r.tokens
                .get(r.tenant, "tok-1", now())
                .await
                .unwrap()
                .unwrap()
                .container,
            "/general/low/"
        );
        let changed = read;
        let mut ghost = changed.clone();
        ghost.id = "ghost".into();
        assert_eq!(r.tokens.update(&ghost).await.unwrap(), TokenWrite::Missing);

        assert!(r.tokens.delete(r.tenant, "tok-1").await.unwrap());
        assert!(
            r.tokens
                .get(r.tenant, "tok-1", now())
                .await
                .unwrap()
                .is_none()
        );
        assert!(!r.tokens.delete(r.tenant, "tok-1").await.unwrap());
        assert!(
            r.tokens.get(other, "tok-1", now()).await.unwrap().is_some(),
            "other tenant untouched"
        );
    })
    .await;
}

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
async fn times_within_one_second_order_and_expire_as_times() {
    each_backend(|r| async move {
        let second = now().replace_nanosecond(0).unwrap() - Duration::minutes(1);
        let at = |ms: i64| second + Duration::milliseconds(ms);
        for (id, ms) in [("t-000", 0), ("t-100", 100), ("t-120", 120), ("t-123", 123)] {
            let mut t = token(r.tenant, id, "/", at(ms));
            t.fingerprint = Some("FP".into());
            r.tokens.insert(&t).await.unwrap();
        }
        let page = PageRequest { page: 1, size: 100 };
        let list = r
            .tokens
            .list(r.tenant, &filter(), page, now())
            .await
            .unwrap();
        assert_eq!(ids(&list), ["t-123", "t-120", "t-100", "t-000"]);
        let oldest = r
            .tokens
            .find_by_fingerprint(r.tenant, "token", "/", "FP", None, now())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(oldest.id, "t-000");
        assert_eq!(list.items[0].created_at, at(123), "read back as stored");

        let mut expiring = token(r.tenant, "t-exp", "/", at(0));
        expiring.expires_at = Some(at(120));
        r.tokens.insert(&expiring).await.unwrap();
        assert!(
            r.tokens
                .get(r.tenant, "t-exp", at(115))
                .await
                .unwrap()
                .is_some()
        );
        assert!(
            r.tokens
                .get(r.tenant, "t-exp", at(125))
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            r.tokens
                .get(r.tenant, "t-exp", at(1000))
                .await
                .unwrap()
                .is_none()
        );
    })
    .await;
}

/// Many concurrent inserts of one id (a client-chosen id, an alias that renders the same): one
/// is stored and told so, every other is told the id is taken, and the stored data is the
/// winner's, on both databases (their group writers see twins in one group).
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

#[tokio::test]
async fn associations_and_children() {
    each_backend(|r| async move {
        for id in ["p-1", "c-1", "c-2"] {
            r.tokens
                .insert(&token(r.tenant, id, "/", now()))
                .await
                .unwrap();
        }
        assert_eq!(
            r.tokens.associate(r.tenant, "p-1", "c-1").await.unwrap(),
            TokenWrite::Done
        );
        assert_eq!(
            r.tokens.associate(r.tenant, "p-1", "c-2").await.unwrap(),
            TokenWrite::Done
        );
        assert_eq!(
            r.tokens.associate(r.tenant, "p-1", "c-1").await.unwrap(),
            TokenWrite::DuplicateId
        );
        assert_eq!(
            r.tokens.associate(r.tenant, "c-1", "p-1").await.unwrap(),
            TokenWrite::Done,
            "reverse is separate"
        );
        assert_eq!(
            r.tokens
                .associate(r.tenant, "p-1", "missing")
                .await
                .unwrap(),
            TokenWrite::Missing
        );
        let page = PageRequest::default();
        let children = r
            .tokens
            .list(
                r.tenant,
                &TokenFilter {
                    parent: Some("p-1".into()),
                    ..filter()
                },
                page,
                now(),
            )
            .await
            .unwrap();
        assert_eq!(children.total_items, 2);
        assert!(r.tokens.dissociate(r.tenant, "p-1", "c-2").await.unwrap());
        assert!(!r.tokens.dissociate(r.tenant, "p-1", "c-2").await.unwrap());
        // Deleting a token removes its associations (both directions).
        assert!(r.tokens.delete(r.tenant, "c-1").await.unwrap());
        let children = r
            .tokens
            .list(
                r.tenant,
                &TokenFilter {
                    parent: Some("p-1".into()),
                    ..filter()
                },
                page,
                now(),
            )
            .await
            .unwrap();
        assert_eq!(children.total_items, 0);
        r.tokens
            .insert(&token(r.tenant, "c-1", "/", now()))
            .await
            .unwrap();
        let children = r
            .tokens
            .list(
                r.tenant,
                &TokenFilter {
                    parent: Some("p-1".into()),
                    ..filter()
                },
                page,
                now(),
            )
            .await
            .unwrap();
        assert_eq!(
            children.total_items, 0,
            "a re-created id does not inherit links"
        );
    })
    .await;
}

#[tokio::test]
async fn expiry_counts_and_activity() {
    each_backend(|r| async move {
        let mut gone = token(r.tenant, "gone", "/", now());
        gone.expires_at = Some(now() - Duration::seconds(1));
        let mut later = token(r.tenant, "later", "/", now());
        later.expires_at = Some(now() + Duration::hours(1));
        let mut card = token(r.tenant, "card-1", "/pci/", now());
        card.token_type = "card".into();
        for t in [&gone, &later, &card] {
            r.tokens.insert(t).await.unwrap();
        }
        assert!(
            r.tokens
                .get(r.tenant, "gone", now())
                .await
                .unwrap()
                .is_none(),
            "expired is invisible at once"
        );
        assert_eq!(
            r.tokens
                .list(r.tenant, &filter(), PageRequest::default(), now())
                .await
                .unwrap()
                .total_items,
            2
        );
        let mut counts = r.tokens.count_by_type(r.tenant, now()).await.unwrap();
        counts.sort_by(|a, b| a.token_type.cmp(&b.token_type));
        assert_eq!(
            counts
                .iter()
                .map(|c| (c.token_type.as_str(), c.count))
                .collect::<Vec<_>>(),
            [("card", 1), ("token", 1)]
        );
        assert!(counts.iter().all(|c| c.last_created_at.is_some()));
        assert_eq!(r.tokens.delete_expired(now()).await.unwrap(), 1);

        let entries = vec![
            (r.tenant, "2026-11".to_string(), "later".to_string()),
            (r.tenant, "2026-11".to_string(), "card-1".to_string()),
        ];
        r.tokens.record_activity(&entries).await.unwrap();
        r.tokens.record_activity(&entries).await.unwrap();
        r.tokens
            .record_activity(&[(r.tenant, "2026-12".to_string(), "later".to_string())])
            .await
            .unwrap();
        assert_eq!(r.tokens.count_active(r.tenant, "2026-11").await.unwrap(), 2);
        assert_eq!(r.tokens.count_active(r.tenant, "2026-12").await.unwrap(), 1);
        r.tokens.delete(r.tenant, "card-1").await.unwrap();
        assert_eq!(
            r.tokens.count_active(r.tenant, "2026-11").await.unwrap(),
            2,
            "a deleted token keeps its count"
        );
    })
    .await;
}

#[tokio::test]
async fn tenant_keys_and_cascade() {
    each_backend(|r| async move {
        assert_eq!(
            r.tenants.data_key(r.tenant).await.unwrap().unwrap(),
            vec![1, 2, 3]
        );
        assert!(
            !r.tenants
                .replace_data_key(r.tenant, &[9], &[4])
                .await
                .unwrap(),
            "compare-and-set"
        );
        assert!(
            r.tenants
                .replace_data_key(r.tenant, &[1, 2, 3], &[4, 5])
                .await
                .unwrap()
        );
        assert_eq!(
            r.tenants.data_keys().await.unwrap(),
            vec![(r.tenant, vec![4, 5])]
        );
        r.tokens
            .insert(&token(r.tenant, "x-1", "/", now()))
            .await
            .unwrap();
        r.tokens
            .record_activity(&[(r.tenant, "2026-11".into(), "x-1".into())])
            .await
            .unwrap();
        assert!(r.tenants.delete(r.tenant).await.unwrap());
        assert!(
            r.tokens
                .get(r.tenant, "x-1", now())
                .await
                .unwrap()
                .is_none()
        );
        assert_eq!(r.tokens.count_active(r.tenant, "2026-11").await.unwrap(), 0);
        // Activity of a tenant deleted meanwhile is dropped, not an error, and never takes
        // another tenant's activity of the same flush with it.
        let other = common::tenant(&r.tenants).await;
        let mut entries = vec![(r.tenant, "2026-11".to_string(), "x-1".to_string())];
        entries.extend((0..5).map(|i| (other, "2026-11".to_string(), format!("o-{i}"))));
        r.tokens.record_activity(&entries).await.unwrap();
        assert_eq!(r.tokens.count_active(r.tenant, "2026-11").await.unwrap(), 0);
        assert_eq!(r.tokens.count_active(other, "2026-11").await.unwrap(), 5);
    })
    .await;
}

/// `get` (on SQLite a direct read on the calling thread) and `get_many` (SeaORM) read every
/// field of a token alike, and `get` honours expiry to the microsecond.
#[tokio::test]
async fn point_read_decodes_every_field_like_the_list_reads() {
    each_backend(|r| async move {
        let created = now();
        let mut t = token(r.tenant, "full", "/pci/high/", created);
        t.token_type = "card".into();
        t.mask = Some(vec![0, 1, 2, 255]);
        t.fingerprint = Some("fp-1".into());
        t.dedup_key = Some("dk-1".into());
        t.fingerprint_expression = Some("{{ data.number }}".into());
        t.created_by = Some(Uuid::new_v4());
        t.modified_by = Some(Uuid::new_v4());
        t.modified_at = Some(created + Duration::milliseconds(3));
        t.expires_at = Some(created + Duration::seconds(60));
        t.metadata.insert("quote\"d".into(), "ü".into());
        assert_eq!(r.tokens.insert(&t).await.unwrap(), TokenWrite::Done);
        let point = r.tokens.get(r.tenant, "full", created).await.unwrap();
        let many = r
            .tokens
            .get_many(r.tenant, &["full".to_string()], created)
            .await
            .unwrap();
        assert_eq!(point.as_ref(), Some(&t));
        assert_eq!(many, vec![t.clone()]);
        let expiry = t.expires_at.unwrap();
        let just_before = expiry - Duration::microseconds(1);
        assert!(
            r.tokens
                .get(r.tenant, "full", just_before)
                .await
                .unwrap()
                .is_some()
        );
        assert!(
            r.tokens
                .get(r.tenant, "full", expiry)
                .await
                .unwrap()
                .is_none()
        );
        let other = tenant(&r.tenants).await;
        assert!(
            r.tokens
                .get(other, "full", created)
                .await
                .unwrap()
                .is_none()
        );
    })
    .await;
}

/// `get_many` (on SQLite point reads on the calling thread, on PostgreSQL the adapter's own
/// connections) returns each asked-for live token of the tenant once: not another tenant's,
/// not one expired at `now`, not twice for an id asked twice.
#[tokio::test]
async fn get_many_reads_each_live_token_of_the_tenant_once() {
    each_backend(|r| async move {
        let created = now();
        let mut expiring = token(r.tenant, "expiring", "/", created);
        expiring.expires_at = Some(created + Duration::seconds(60));
        for t in [token(r.tenant, "kept", "/", created), expiring.clone()] {
            assert_eq!(r.tokens.insert(&t).await.unwrap(), TokenWrite::Done);
        }
        let other = tenant(&r.tenants).await;
        let theirs = token(other, "theirs", "/", created);
        assert_eq!(r.tokens.insert(&theirs).await.unwrap(), TokenWrite::Done);
        let sorted = |found: Vec<StoredToken>| {
            let mut ids: Vec<String> = found.into_iter().map(|t| t.id).collect();
            ids.sort();
            ids
        };
        let asked: Vec<String> = ["kept", "expiring", "theirs", "kept", "none"]
            .map(String::from)
            .to_vec();
        let before = r.tokens.get_many(r.tenant, &asked, created).await.unwrap();
        assert_eq!(sorted(before), ["expiring", "kept"]);
        let at_expiry = expiring.expires_at.unwrap();
        let after = r
            .tokens
            .get_many(r.tenant, &asked, at_expiry)
            .await
            .unwrap();
        assert_eq!(sorted(after), ["kept"]);
        let mine = r.tokens.get_many(other, &asked, created).await.unwrap();
        assert_eq!(mine, vec![theirs]);
        assert!(
            r.tokens
                .get_many(r.tenant, &[], created)
                .await
                .unwrap()
                .is_empty()
        );
    })
    .await;
}
