//! A tenant's data key (compare-and-set) and the cascade of its delete.

use tokenvault_domain::ports::{TenantKeys, TokenRepository, UsageRepository};

use crate::common::{self, each_backend, now, token};

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
