//! Reading tokens: times within one second order and expire as times, a point read decodes
//! every field like the list reads, `get_many` reads each live token of the tenant once.

use time::Duration;
use tokenvault_domain::page::PageRequest;
use tokenvault_domain::ports::{TokenRepository, TokenWrite};
use tokenvault_domain::token::StoredToken;
use uuid::Uuid;

use crate::common::{each_backend, filter, ids, now, tenant, token};

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
