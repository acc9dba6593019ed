//! What the usage report counts: live tokens per type, monthly active tokens.

use async_trait::async_trait;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::error::RepoError;

/// Live tokens of one type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeCount {
    /// Type name.
    pub token_type: String,
    /// Live tokens.
    pub count: u64,
    /// Newest creation.
    pub last_created_at: Option<OffsetDateTime>,
}

/// What the usage report and the operator's tenant summary count: live tokens per type and
/// monthly active tokens, the latter fed by the activity flush. Apart from
/// [`TokenRepository`](super::TokenRepository), so the areas that only count never hold the tokens' storage.
///
/// # Errors
/// `RepoError::Backend` for any storage failure.
#[async_trait]
pub trait UsageRepository: Send + Sync {
    /// Live tokens per type.
    async fn count_by_type(
        &self,
        tenant_id: Uuid,
        now: OffsetDateTime,
    ) -> Result<Vec<TypeCount>, RepoError>;

    /// Records tokens as active in a month ([`month_of`]); one upsert per (tenant, month, token).
    async fn record_activity(&self, entries: &[(Uuid, String, String)]) -> Result<(), RepoError>;

    /// Distinct active tokens of the tenant in the month: the tokens created in it, counted
    /// by the store as they are written (a deleted one keeps its count), and the tokens
    /// recorded by [`Self::record_activity`] in it (the domain records only tokens created in
    /// an earlier month, so none is counted twice).
    async fn count_active(&self, tenant_id: Uuid, month: &str) -> Result<u64, RepoError>;
}

/// The UTC calendar month of `t` as the monthly active count keys it (`YYYY-MM`): the month of
/// [`UsageRepository::record_activity`] and [`UsageRepository::count_active`], and the month a
/// store counts a new token in.
pub fn month_of(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!("{:04}-{:02}", t.year(), u8::from(t.month()))
}
