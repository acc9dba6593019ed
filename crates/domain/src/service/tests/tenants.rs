//! Deleting a tenant: the first step at the caller's request, the rest left to the purge.

use mockall::predicate::eq;
use uuid::Uuid;

use super::{MockApplications, MockTenants, now, principal, vault};
use crate::error::Error;
use crate::permission::Permission;

#[tokio::test]
async fn deleting_the_tenant_retires_it_now_and_leaves_its_rows_to_the_purge() {
    let mut tenants = MockTenants::new();
    tenants
        .expect_delete()
        .with(eq(Uuid::from_u128(100)), eq(now()))
        .times(1)
        .returning(|_, _| Ok(true));
    tenants.expect_purge_deleted().never();
    let caller = principal(&[Permission::TenantDelete]);
    vault(tenants, MockApplications::new())
        .tenants
        .delete_tenant(&caller)
        .await
        .unwrap();
}

#[tokio::test]
async fn deleting_needs_the_permission_and_a_tenant_deleted_once() {
    let mut tenants = MockTenants::new();
    tenants.expect_delete().times(1).returning(|_, _| Ok(false));
    let v = vault(tenants, MockApplications::new());
    assert!(matches!(
        v.tenants
            .delete_tenant(&principal(&[Permission::TenantRead]))
            .await,
        Err(Error::Forbidden)
    ));
    assert!(matches!(
        v.tenants
            .delete_tenant(&principal(&[Permission::TenantDelete]))
            .await,
        Err(Error::NotFound)
    ));
}

#[tokio::test]
async fn the_purge_answers_the_rows_removed() {
    let mut tenants = MockTenants::new();
    let mut left = vec![0, 1, 500];
    tenants
        .expect_purge_deleted()
        .with(eq(500))
        .times(3)
        .returning(move |_| Ok(left.pop().unwrap_or(0)));
    let v = vault(tenants, MockApplications::new());
    assert_eq!(v.tenants.purge_deleted_tenants(500).await.unwrap(), 500);
    assert_eq!(v.tenants.purge_deleted_tenants(500).await.unwrap(), 1);
    assert_eq!(v.tenants.purge_deleted_tenants(500).await.unwrap(), 0);
}
