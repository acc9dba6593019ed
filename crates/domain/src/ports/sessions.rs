//! Storage of sessions. Keys and nonces are stored only as hashes.

use async_trait::async_trait;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::application::{Application, KeyHash};
use crate::error::RepoError;
use crate::session::{Session, SessionGrant};
use crate::tenant::TenantSettings;

/// A session found by its key, with what authenticating it needs.
#[derive(Clone, Debug)]
pub struct AuthorizedSession {
    /// The session.
    pub session: Session,
    /// The application that authorized it, as it is now (its rights cap the session's).
    pub authorizer: Application,
    /// The tenant's settings.
    pub settings: TenantSettings,
}

/// Storage of sessions.
///
/// # Errors
/// `RepoError::Conflict` on a duplicate id, key or nonce; `RepoError::Backend` for any storage
/// failure.
#[async_trait]
pub trait SessionRepository: Send + Sync {
    /// Stores a new, unauthorized session.
    async fn insert(
        &self,
        session: &Session,
        key_hash: &KeyHash,
        nonce_hash: &KeyHash,
    ) -> Result<(), RepoError>;

    /// Atomically consumes the nonce of the tenant's unauthorized session that is live at `now`
    /// and stores the grant (and the new `expires_at`, when given); the session's id. `None` when
    /// no such session holds the nonce (unknown, used, expired, or another tenant's): concurrent
    /// callers with one nonce see one `Some`.
    async fn authorize(
        &self,
        tenant_id: Uuid,
        nonce_hash: &KeyHash,
        authorized_by: Uuid,
        grant: &SessionGrant,
        now: OffsetDateTime,
    ) -> Result<Option<Uuid>, RepoError>;

    /// The authorized session live at `now` whose key has this hash, in any tenant.
    async fn find_by_key_hash(
        &self,
        hash: &KeyHash,
        now: OffsetDateTime,
    ) -> Result<Option<AuthorizedSession>, RepoError>;

    /// Deletes the tenant's sessions started or authorized by the application (its key was
    /// replaced: what the old key began ends with it); how many.
    async fn delete_for_application(
        &self,
        tenant_id: Uuid,
        application_id: Uuid,
    ) -> Result<u64, RepoError>;

    /// Deletes every session expired at `now`; how many.
    async fn delete_expired(&self, now: OffsetDateTime) -> Result<u64, RepoError>;
}
