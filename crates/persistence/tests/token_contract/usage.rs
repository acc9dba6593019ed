//! Usage: expiry, counts by type and the active tokens of a month.

use time::Duration;
use time::macros::datetime;
use tokenvault_domain::page::PageRequest;
use tokenvault_domain::ports::{TokenRepository, TokenWrite, UsageRepository};

use crate::common::{each_backend, filter, now, tenant, token};

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
