//! Storage of the audit log: per tenant, a chain of entries and its head.

use async_trait::async_trait;
use uuid::Uuid;

use crate::audit::{AppendOutcome, AuditEntry, AuditFilter, AuditHead};
use crate::error::RepoError;
use crate::page::{Page, PageRequest};

/// Storage of the audit log.
///
/// # Errors
/// `RepoError::Backend` for any storage failure.
#[async_trait]
pub trait AuditRepository: Send + Sync {
    /// The tenant's chain head; `None` before its first entry.
    async fn head(&self, tenant_id: Uuid) -> Result<Option<AuditHead>, RepoError>;

    /// Appends `entries` (consecutive, following `expected`) and moves the head to the last,
    /// atomically, only if the head is still `expected` (compare and swap: instances sharing a
    /// database never fork a chain). Nothing is written unless it answers
    /// [`AppendOutcome::Appended`]: [`AppendOutcome::HeadMoved`] when the head was not
    /// `expected`, [`AppendOutcome::SeqTaken`] when it was but an entry's (tenant, seq) place
    /// was taken already (a row beyond the head: the chain is broken).
    async fn append(
        &self,
        tenant_id: Uuid,
        expected: Option<&AuditHead>,
        entries: &[AuditEntry],
    ) -> Result<AppendOutcome, RepoError>;

    /// A page of the tenant's entries matching `filter`, newest first.
    async fn list(
        &self,
        tenant_id: Uuid,
        filter: &AuditFilter,
        page: PageRequest,
    ) -> Result<Page<AuditEntry>, RepoError>;

    /// Up to `limit` of the tenant's entries with `seq > after`, by ascending `seq`.
    async fn chain(
        &self,
        tenant_id: Uuid,
        after: i64,
        limit: u64,
    ) -> Result<Vec<AuditEntry>, RepoError>;

    /// Every tenant that has a chain head.
    async fn tenants(&self) -> Result<Vec<Uuid>, RepoError>;
}
