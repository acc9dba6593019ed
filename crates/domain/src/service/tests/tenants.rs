//! Deleting a tenant: the first step at the caller's request, the rest left to the purge.

use mockall::predicate::eq;
use uuid::Uuid;

use super::{MockApplications, MockTenants, now, principal, tenant_row, vault};
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

/// A create whose tenant was deleted and purged after the caller's key was checked meets a
/// failed foreign key: 401 when the tenant is gone, as the key now is; an internal error when
/// the tenant is still there (a failed foreign key is then a bug, not a race).
#[tokio::test]
async fn a_create_that_meets_its_tenants_deletion_is_unauthenticated() {
    for tenant_gone in [true, false] {
        let mut apps = MockApplications::new();
        apps.expect_insert()
            .times(1)
            .returning(|_, _| Err(crate::RepoError::Gone("FOREIGN KEY".into())));
        let mut tenants = MockTenants::new();
        tenants
            .expect_is_live()
            .with(eq(Uuid::from_u128(100)))
            .times(1)
            .returning(move |_| Ok(!tenant_gone));
        let err = vault(tenants, apps)
            .applications
            .create_application(
                &principal(&[Permission::ApplicationCreate]),
                super::new_private(),
            )
            .await
            .unwrap_err();
        if tenant_gone {
            assert!(matches!(err, Error::Unauthenticated), "{err:?}");
        } else {
            assert!(matches!(err, Error::Internal { .. }), "{err:?}");
        }
    }
}

/// Claims whose row's foreign key fails: the tenant was purged after the key check.
struct PurgedTenantClaims;

#[async_trait::async_trait]
impl crate::ports::IdempotencyRepository for PurgedTenantClaims {
    async fn claim(
        &self,
        _: &crate::ports::IdempotencyKey,
        _: &[u8],
        _: time::OffsetDateTime,
        _: time::OffsetDateTime,
        _: time::OffsetDateTime,
    ) -> Result<crate::ports::Claim, crate::RepoError> {
        Err(crate::RepoError::Gone("FOREIGN KEY".into()))
    }
    async fn delete_expired(&self, _: time::OffsetDateTime) -> Result<u64, crate::RepoError> {
        Ok(0)
    }
    async fn complete(
        &self,
        _: &crate::ports::IdempotencyKey,
        _: &[u8],
    ) -> Result<(), crate::RepoError> {
        Ok(())
    }
    async fn release(&self, _: &crate::ports::IdempotencyKey) -> Result<(), crate::RepoError> {
        Ok(())
    }
}

/// An `Idempotency-Key` claim is a create too: made before the handler of a request whose
/// tenant was purged meanwhile, it is refused as unauthenticated, not a 500.
#[tokio::test]
async fn an_idempotency_claim_that_meets_its_tenants_deletion_is_unauthenticated() {
    let mut tenants = MockTenants::new();
    tenants
        .expect_is_live()
        .with(eq(Uuid::from_u128(100)))
        .times(1)
        .returning(|_| Ok(false));
    let mut cipher = super::MockCiph::new();
    cipher.expect_has_tenant_key().return_const(true);
    cipher
        .expect_fingerprint()
        .returning(|_, _| Ok("fp".into()));
    let mut ports = super::ports(tenants, MockApplications::new());
    ports.cipher = std::sync::Arc::new(cipher);
    ports.idempotency = std::sync::Arc::new(PurgedTenantClaims);
    let caller = principal(&[Permission::TokenCreate]);
    let err = super::Vault::new(ports)
        .idempotency
        .idempotency_begin(&caller, "retry-1", b"POST /tokens")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unauthenticated), "{err:?}");
}

/// Another instance deleted a tenant whose data key this one still holds in memory: the purge
/// job's check drops that key and keeps the keys of live tenants.
#[tokio::test]
async fn the_keys_of_tenants_deleted_elsewhere_are_dropped_from_memory() {
    let (live, gone) = (Uuid::from_u128(100), Uuid::from_u128(200));
    let mut tenants = MockTenants::new();
    tenants
        .expect_get()
        .with(eq(live))
        .returning(|id| Ok(Some(tenant_row(id))));
    tenants.expect_get().with(eq(gone)).returning(|_| Ok(None));
    let mut cipher = super::MockCiph::new();
    cipher
        .expect_cached_tenant_keys()
        .return_const(vec![live, gone]);
    // Forgetting `live` would find no expectation and fail the test.
    cipher
        .expect_forget_tenant_key()
        .with(eq(gone))
        .times(1)
        .return_const(());
    let mut ports = super::ports(tenants, MockApplications::new());
    ports.cipher = std::sync::Arc::new(cipher);
    let v = super::Vault::new(ports);
    assert_eq!(v.tenants.forget_deleted_tenant_keys().await.unwrap(), 1);
}
