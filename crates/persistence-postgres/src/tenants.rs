//! PostgreSQL's tenant reads (`tenants.rs`): on the adapter's own connections (`reads.rs`).

use async_trait::async_trait;
use tokenvault_domain::RepoError;
use tokenvault_domain::tenant::Tenant;
use uuid::Uuid;

use tokenvault_persistence_shared::backend::TenantReads;
use tokenvault_persistence_shared::reads::Reads;
use tokenvault_persistence_shared::tenants::by_id;

/// A PostgreSQL database's tenant reads.
#[derive(Debug)]
pub(crate) struct PgTenants {
    reads: Reads,
}

impl PgTenants {
    /// The reads of a PostgreSQL database.
    pub(crate) fn new(reads: Reads) -> Self {
        Self { reads }
    }
}

#[async_trait]
impl TenantReads for PgTenants {
    async fn by_id(&self, id: Uuid) -> Result<Option<Tenant>, RepoError> {
        by_id(&self.reads, id).await
    }
}
