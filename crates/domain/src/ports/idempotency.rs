//! Storage of idempotent requests (docs/decisions.md §11): one row per (application, key),
//! claimed when the first request starts and completed with its encrypted response.

use async_trait::async_trait;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::error::RepoError;

/// Who sent a key, and the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyKey {
    /// The caller's tenant.
    pub tenant_id: Uuid,
    /// The caller: a key belongs to the application that sent it.
    pub application_id: Uuid,
    /// The `SVC-IDEMPOTENCY-KEY` value (1..=255 visible ASCII characters).
    pub key: String,
}

/// What a claim found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// No live record: this request now holds the key and must complete or release it.
    Claimed,
    /// A request with this key has not finished.
    InFlight {
        /// Its request fingerprint.
        fingerprint: Vec<u8>,
    },
    /// A request with this key succeeded.
    Done {
        /// Its request fingerprint.
        fingerprint: Vec<u8>,
        /// Its response, encrypted under the tenant's data key.
        response: Vec<u8>,
    },
}

/// Storage of idempotent requests.
///
/// # Errors
/// `RepoError::Backend` for any storage failure.
#[async_trait]
pub trait IdempotencyRepository: Send + Sync {
    /// Atomically claims `key` for a request with `fingerprint` at `now`, unless a live record
    /// of it exists: what was found. Records older than `expired_before`, and records still in
    /// flight older than `stale_before` (their request died), are replaced.
    async fn claim(
        &self,
        key: &IdempotencyKey,
        fingerprint: &[u8],
        now: OffsetDateTime,
        expired_before: OffsetDateTime,
        stale_before: OffsetDateTime,
    ) -> Result<Claim, RepoError>;

    /// Deletes every record older than `expired_before`; how many.
    async fn delete_expired(&self, expired_before: OffsetDateTime) -> Result<u64, RepoError>;

    /// Stores the response of the request holding `key`.
    async fn complete(&self, key: &IdempotencyKey, response: &[u8]) -> Result<(), RepoError>;

    /// Releases `key` (its request failed: it may be retried).
    async fn release(&self, key: &IdempotencyKey) -> Result<(), RepoError>;
}
