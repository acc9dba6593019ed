//! Token repository contract: the same stories on SQLite and PostgreSQL, fresh database each.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use time::Duration;
use time::macros::datetime;
use tokenvault_domain::page::PageRequest;
use tokenvault_domain::ports::{
    TenantKeys, TokenFilter, TokenRepository, TokenWrite, UsageRepository,
};
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
        let mut counts = r.usage.count_by_type(r.tenant, now()).await.unwrap();
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
            (r.tenant, "2020-11".to_string(), "later".to_string()),
            (r.tenant, "2020-11".to_string(), "card-1".to_string()),
        ];
        r.usage.record_activity(&entries).await.unwrap();
        r.usage.record_activity(&entries).await.unwrap();
        r.usage
            .record_activity(&[(r.tenant, "2020-12".to_string(), "later".to_string())])
            .await
            .unwrap();
        assert_eq!(r.usage.count_active(r.tenant, "2020-11").await.unwrap(), 2);
        assert_eq!(r.usage.count_active(r.tenant, "2020-12").await.unwrap(), 1);
        r.tokens.delete(r.tenant, "card-1").await.unwrap();
        assert_eq!(
            r.usage.count_active(r.tenant, "2020-11").await.unwrap(),
            2,
            "a deleted token keeps its count"
        );
    })
    .await;
}

/// A token counts as active in the UTC month it is created in, without an activity row, by
/// every insert path; a deleted one keeps its count; activity rows add the tokens made earlier.
#[tokio::test]
async fn created_tokens_count_active_in_their_month() {
    each_backend(|r| async move {
        let november = datetime!(2026-11-30 23:59:59.999999 UTC);
        let december = datetime!(2026-12-01 00:00:00 UTC);
        r.tokens
            .insert(&token(r.tenant, "n-1", "/", november))
            .await
            .unwrap();
        // Not UTC: the month is the UTC one (December 1st, 00:30 UTC).
        let d1 = datetime!(2026-11-30 23:30:00 -01:00);
        r.tokens
            .insert(&token(r.tenant, "d-1", "/", d1))
            .await
            .unwrap();
        let all = [
            token(r.tenant, "n-2", "/", november),
            token(r.tenant, "d-2", "/", december),
        ];
        assert_eq!(r.tokens.insert_all(&all).await.unwrap(), TokenWrite::Done);
        let active = |month: &'static str| {
            let usage = r.usage.clone();
            let tenant = r.tenant;
            async move { usage.count_active(tenant, month).await.unwrap() }
        };
        assert_eq!(active("2026-11").await, 2);
        assert_eq!(active("2026-12").await, 2);
        assert_eq!(active("2027-01").await, 0);
        // A November token read in December is one more active token of December.
        r.usage
            .record_activity(&[(r.tenant, "2026-12".into(), "n-1".into())])
            .await
            .unwrap();
        assert_eq!(active("2026-12").await, 3);
        assert!(r.tokens.delete(r.tenant, "n-2").await.unwrap());
        assert_eq!(
            active("2026-11").await,
            2,
            "a deleted token keeps its count"
        );
        let other = tenant(&r.tenants).await;
        assert_eq!(r.usage.count_active(other, "2026-11").await.unwrap(), 0);
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
        r.usage
            .record_activity(&[(r.tenant, "2026-11".into(), "x-1".into())])
            .await
            .unwrap();
        assert!(common::delete_tenant(&r.tenants, r.tenant).await);
        assert!(
            r.tokens
                .get(r.tenant, "x-1", now())
                .await
                .unwrap()
                .is_none()
        );
        assert_eq!(r.usage.count_active(r.tenant, "2026-11").await.unwrap(), 0);
        // Activity of a tenant deleted meanwhile is dropped, not an error, and never takes
        // another tenant's activity of the same flush with it.
        let other = common::tenant(&r.tenants).await;
        let mut entries = vec![(r.tenant, "2026-11".to_string(), "x-1".to_string())];
        entries.extend((0..5).map(|i| (other, "2026-11".to_string(), format!("o-{i}"))));
        r.usage.record_activity(&entries).await.unwrap();
        assert_eq!(r.usage.count_active(r.tenant, "2026-11").await.unwrap(), 0);
        assert_eq!(r.usage.count_active(other, "2026-11").await.unwrap(), 5);
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
