//! Monthly activity beside a tenant's delete, on SQLite and PostgreSQL.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use tokenvault_domain::ports::UsageRepository;

mod common;

use common::{each_backend, tenant};

#[tokio::test]
async fn activity_recorded_while_its_tenant_is_deleted_keeps_the_other_tenants_rows() {
    each_backend(|r| async move {
        for round in 0..20_u32 {
            let doomed = tenant(&r.tenants).await;
            let month = format!("2026-{:02}", round % 12 + 1);
            let mut entries: Vec<_> = (0..50)
                .map(|i| (doomed, month.clone(), format!("d-{i}")))
                .collect();
            entries.extend((0..50).map(|i| (r.tenant, month.clone(), format!("k-{round}-{i}"))));
            let (recorded, deleted) = tokio::join!(
                r.usage.record_activity(&entries),
                common::delete_tenant_purged(&r.tenants, doomed)
            );
            recorded.unwrap();
            assert!(deleted.unwrap(), "the delete goes through");
            assert_eq!(r.usage.count_active(doomed, &month).await.unwrap(), 0);
            assert_eq!(
                r.usage.count_active(r.tenant, &month).await.unwrap(),
                50 * (u64::from(round) / 12 + 1),
                "round {round}"
            );
        }
    })
    .await;
}
