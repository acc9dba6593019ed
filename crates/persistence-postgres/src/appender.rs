//! PostgreSQL's audit appends (`audit.rs`): on the appender thread (`audit_copy.rs`).

use std::sync::Arc;

use async_trait::async_trait;
use tokenvault_domain::RepoError;
use tokenvault_domain::audit::{AppendOutcome, AuditEntry, AuditHead};
use uuid::Uuid;

use tokenvault_persistence_shared::backend::AuditAppender;

/// A PostgreSQL database's appends, on its appender thread (`audit_copy.rs`).
#[derive(Debug)]
pub(crate) struct PgAppender {
    pg: Arc<crate::direct::PgDirect>,
}

impl PgAppender {
    /// The appends of the database whose own threads are `pg`'s.
    pub(crate) fn new(pg: Arc<crate::direct::PgDirect>) -> Self {
        Self { pg }
    }
}

#[async_trait]
impl AuditAppender for PgAppender {
    async fn append(
        &self,
        tenant_id: Uuid,
        expected: Option<&AuditHead>,
        entries: &[AuditEntry],
    ) -> Result<AppendOutcome, RepoError> {
        self.pg
            .audit()
            .append(tenant_id, expected.cloned(), entries)
            .await
    }

    async fn settled(&self) -> Result<(), RepoError> {
        self.pg.audit().settled().await
    }
}
