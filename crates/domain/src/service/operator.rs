//! The operator's tenant commands (`tokenvault tenants list|show|delete`): no API key, so no
//! caller; whoever runs them holds the database and the master key already.

use uuid::Uuid;

use super::Vault;
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

impl Vault {
    /// Every tenant, oldest first.
    ///
    /// # Errors
    /// A storage failure.
    pub async fn list_tenants(&self) -> Result<Vec<Tenant>, Error> {
        Ok(self.ports.tenants.list().await?)
    }

    /// One tenant with its token counts.
    ///
    /// # Errors
    /// [`Error::NotFound`] when it does not exist; a storage failure.
    pub async fn tenant_summary(&self, id: Uuid) -> Result<TenantSummary, Error> {
        let tenant = self.ports.tenants.get(id).await?.ok_or(Error::NotFound)?;
        let tokens = self
            .ports
            .tokens
            .count_by_type(id, self.ports.clock.now())
            .await?;
        Ok(TenantSummary { tenant, tokens })
    }

    /// Deletes a tenant and everything it owns, as `DELETE /tenants/self` does.
    ///
    /// # Errors
    /// [`Error::NotFound`] when it does not exist; a storage failure.
    pub async fn remove_tenant(&self, id: Uuid) -> Result<(), Error> {
        if self.ports.tenants.delete(id).await? {
            self.ports.cipher.forget_tenant_key(id);
            tracing::info!(tenant_id = %id, "tenant deleted by the operator");
            Ok(())
        } else {
            Err(Error::NotFound)
        }
    }
}
