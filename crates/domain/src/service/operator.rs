//! The operator's tenant commands (`tokenvault tenants list|show|delete`): no API key, so no
//! caller; whoever runs them holds the database and the master key already.

use uuid::Uuid;

use super::Tenants;
use crate::error::Error;
use crate::ports::TypeCount;
use crate::tenant::Tenant;

/// A tenant and its live tokens per type (`tokenvault tenants show`).
#[derive(Debug)]
pub struct TenantSummary {
    /// The tenant.
    pub tenant: Tenant,
    /// Live tokens per type.
    pub tokens: Vec<TypeCount>,
}

impl Tenants {
    /// Every tenant, oldest first.
    ///
    /// # Errors
    /// A storage failure.
    pub async fn list_tenants(&self) -> Result<Vec<Tenant>, Error> {
        Ok(self.store.list().await?)
    }

    /// One tenant with its token counts.
    ///
    /// # Errors
    /// [`Error::NotFound`] when it does not exist; a storage failure.
    pub async fn tenant_summary(&self, id: Uuid) -> Result<TenantSummary, Error> {
        let tenant = self.store.get(id).await?.ok_or(Error::NotFound)?;
        let tokens = self.usage.count_by_type(id, self.clock.now()).await?;
        Ok(TenantSummary { tenant, tokens })
    }

    /// Deletes a tenant and everything it owns, as `DELETE /tenants/self` does.
    ///
    /// # Errors
    /// [`Error::NotFound`] when it does not exist; a storage failure.
    pub async fn remove_tenant(&self, id: Uuid) -> Result<(), Error> {
        self.retire_tenant(id).await?;
        tracing::info!(tenant_id = %id, "tenant deleted by the operator");
        Ok(())
    }

    /// The first step of deleting tenant `id` (its keys and data key gone at once, its rows
    /// left to [`Self::purge_deleted_tenants`]).
    pub(super) async fn retire_tenant(&self, id: Uuid) -> Result<(), Error> {
        if !self.store.delete(id, self.clock.now()).await? {
            return Err(Error::NotFound);
        }
        self.cipher.forget_tenant_key(id);
        Ok(())
    }

    /// Drops from this instance's memory the data keys of tenants deleted since they were
    /// loaded, by another instance too (`DELETE /tenants/self` forgets the key only on the
    /// instance that served it); how many. One tenant lookup per cached key: run by the purge
    /// job every 30 s.
    ///
    /// # Errors
    /// A storage failure (the keys checked before it are forgotten).
    pub async fn forget_deleted_tenant_keys(&self) -> Result<usize, Error> {
        let mut forgotten = 0;
        for tenant_id in self.cipher.cached_tenant_keys() {
            // `get` leaves deleted tenants (tombstones) out, as every lookup does.
            if self.store.get(tenant_id).await?.is_none() {
                self.cipher.forget_tenant_key(tenant_id);
                forgotten += 1;
            }
        }
        Ok(forgotten)
    }

    /// Removes at most `batch` rows of deleted tenants (the second step of a tenant's
    /// deletion, run by a background job until it returns 0); how many rows went.
    ///
    /// # Errors
    /// A storage failure.
    pub async fn purge_deleted_tenants(&self, batch: u64) -> Result<u64, Error> {
        Ok(self.store.purge_deleted(batch).await?)
    }
}
