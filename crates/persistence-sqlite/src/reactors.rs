//! SQLite's formula and reactor reads (`reactors.rs`): on the calling thread (`direct.rs`),
//! through SeaORM's pool when the file is locked for the moment.

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use sea_orm::DatabaseConnection;
use tokenvault_domain::RepoError;
use tokenvault_domain::formula::Formula;
use tokenvault_domain::reactor::Reactor;
use uuid::Uuid;

use crate::direct::DirectReads;
use tokenvault_persistence_shared::backend::ReactorReads;
use tokenvault_persistence_shared::entity::{formula, reactor};
use tokenvault_persistence_shared::reactors::{formula_by_id, reactor_by_id};
use tokenvault_persistence_shared::rows::reactor::{formula_to_domain, reactor_to_domain};
use tokenvault_persistence_shared::rows::{self, columns};

static FORMULA_BY_ID: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {} FROM reactor_formulas WHERE tenant_id = ?1 AND id = ?2",
        columns::<formula::Column>(None, &[])
    )
});

static REACTOR_BY_ID: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {} FROM reactors WHERE tenant_id = ?1 AND id = ?2",
        columns::<reactor::Column>(None, &[])
    )
});

/// The primary key `(tenant_id, id)` as sqlx stores it on SQLite (16-byte blobs).
fn key_params(tenant_id: Uuid, id: Uuid) -> [Vec<u8>; 2] {
    [tenant_id.as_bytes().to_vec(), id.as_bytes().to_vec()]
}

/// A SQLite file's formula and reactor reads.
#[derive(Debug)]
pub(crate) struct SqliteReactors {
    direct: Arc<DirectReads>,
    pool: DatabaseConnection,
}

impl SqliteReactors {
    /// The reads of the file behind `direct`, `pool` standing in while it is locked.
    pub(crate) fn new(direct: Arc<DirectReads>, pool: DatabaseConnection) -> Self {
        Self { direct, pool }
    }
}

#[async_trait]
impl ReactorReads for SqliteReactors {
    async fn formula(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Formula>, RepoError> {
        if let Some(found) =
            self.direct
                .one(FORMULA_BY_ID.as_str(), key_params(tenant_id, id), |row| {
                    rows::whole(row, rows::reactor::formula_from_sqlite)
                })
        {
            return found?.map(formula_to_domain).transpose();
        }
        formula_by_id(&self.pool, tenant_id, id).await
    }

    async fn reactor(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Reactor>, RepoError> {
        if let Some(found) =
            self.direct
                .one(REACTOR_BY_ID.as_str(), key_params(tenant_id, id), |row| {
                    rows::whole(row, rows::reactor::reactor_from_sqlite)
                })
        {
            return found?.map(reactor_to_domain).transpose();
        }
        reactor_by_id(&self.pool, tenant_id, id).await
    }
}
