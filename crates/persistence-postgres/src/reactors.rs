//! PostgreSQL's formula and reactor reads (`reactors.rs`): on the adapter's own connections
//! (`reads.rs`).

use async_trait::async_trait;
use tokenvault_domain::RepoError;
use tokenvault_domain::formula::Formula;
use tokenvault_domain::reactor::Reactor;
use uuid::Uuid;

use tokenvault_persistence_shared::backend::ReactorReads;
use tokenvault_persistence_shared::reactors::{formula_by_id, reactor_by_id};
use tokenvault_persistence_shared::reads::Reads;

/// A PostgreSQL database's formula and reactor reads.
#[derive(Debug)]
pub(crate) struct PgReactors {
    reads: Reads,
}

impl PgReactors {
    /// The reads of a PostgreSQL database.
    pub(crate) fn new(reads: Reads) -> Self {
        Self { reads }
    }
}

#[async_trait]
impl ReactorReads for PgReactors {
    async fn formula(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Formula>, RepoError> {
        formula_by_id(&self.reads, tenant_id, id).await
    }

    async fn reactor(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Reactor>, RepoError> {
        reactor_by_id(&self.reads, tenant_id, id).await
    }
}
