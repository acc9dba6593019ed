//! SQLite's tenant reads (`tenants.rs`): on the calling thread (`direct.rs`), through SeaORM's
//! pool when the file is locked for the moment.

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use sea_orm::DatabaseConnection;
use tokenvault_domain::RepoError;
use tokenvault_domain::tenant::Tenant;
use uuid::Uuid;

use crate::direct::DirectReads;
use tokenvault_persistence_shared::backend::TenantReads;
use tokenvault_persistence_shared::entity::tenant;
use tokenvault_persistence_shared::rows::tenant::to_domain;
use tokenvault_persistence_shared::rows::{self, columns};
use tokenvault_persistence_shared::tenants::by_id;

/// A live tenant; its wrapped data key is not read: `get` does not return it (`data_key`
/// does).
static TENANT_BY_ID: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {} FROM tenants WHERE id = ?1 AND deleted_at IS NULL",
        columns::<tenant::Column>(None, rows::tenant::UNREAD)
    )
});

/// A SQLite file's tenant reads.
#[derive(Debug)]
pub(crate) struct SqliteTenants {
    direct: Arc<DirectReads>,
    pool: DatabaseConnection,
}

impl SqliteTenants {
    /// The reads of the file behind `direct`, `pool` standing in while it is locked.
    pub(crate) fn new(direct: Arc<DirectReads>, pool: DatabaseConnection) -> Self {
        Self { direct, pool }
    }
}

#[async_trait]
impl TenantReads for SqliteTenants {
    async fn by_id(&self, id: Uuid) -> Result<Option<Tenant>, RepoError> {
        if let Some(found) =
            self.direct
                .one(TENANT_BY_ID.as_str(), [id.as_bytes().to_vec()], |row| {
                    rows::whole(row, rows::tenant::from_sqlite)
                })
        {
            return Ok(found?.map(to_domain));
        }
        by_id(&self.pool, id).await
    }
}
