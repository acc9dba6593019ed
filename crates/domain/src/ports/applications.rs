//! Storage of applications, and the key lookup that may read what the request reads next in
//! the same round trip.

use async_trait::async_trait;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::application::{Application, KeyHash};
use crate::error::RepoError;
use crate::page::{Page, PageRequest};
use crate::ports::{AlsoRead, KeyRead};
use crate::tenant::TenantSettings;

/// Storage of applications. Every read and write but the key lookup is confined to one tenant.
///
/// # Errors
/// `RepoError::Conflict` when a key hash or id is already taken; `RepoError::Backend` otherwise.
#[async_trait]
pub trait ApplicationRepository: Send + Sync {
    /// Stores a new application with the hash of its key.
    async fn insert(&self, application: &Application, key_hash: &KeyHash) -> Result<(), RepoError>;

    /// The application whose key has this hash, with its tenant's settings (one query).
    async fn find_by_key_hash(
        &self,
        hash: &KeyHash,
    ) -> Result<Option<(Application, TenantSettings)>, RepoError>;

    /// What [`Self::find_by_key_hash`] finds and, where the database reads ahead, what the
    /// request reads next of the key's tenant (`also`), in the same round trip: the read paths
    /// of `GET /tokens/{id}`, `POST /reactors/{id}/react` and `POST /tokens/search` pay one
    /// query for authentication and their read. Reading nothing ahead is always correct (the
    /// use case then reads it itself); what is read is read for a private application's key
    /// only, in its own tenant.
    async fn find_by_key_hash_also(
        &self,
        hash: &KeyHash,
        also: &AlsoRead,
        now: OffsetDateTime,
    ) -> Result<Option<KeyRead>, RepoError> {
        let _ = (also, now);
        Ok(self
            .find_by_key_hash(hash)
            .await?
            .map(|(application, settings)| KeyRead::alone(application, settings)))
    }

    /// The application `id` of `tenant_id`.
    async fn get(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Application>, RepoError>;

    /// A page of the tenant's applications, newest first, optionally only those in `ids`.
    async fn list(
        &self,
        tenant_id: Uuid,
        ids: &[Uuid],
        page: PageRequest,
    ) -> Result<Page<Application>, RepoError>;

    /// Replaces name, permissions, rules and modification fields; `false` when it is gone.
    async fn update(&self, application: &Application) -> Result<bool, RepoError>;

    /// Replaces the key hash (the old key stops working at once); `false` when it is gone.
    async fn replace_key(
        &self,
        application: &Application,
        key_hash: &KeyHash,
    ) -> Result<bool, RepoError>;

    /// Deletes the application; `false` when it did not exist.
    async fn delete(&self, tenant_id: Uuid, id: Uuid) -> Result<bool, RepoError>;

    /// Deletes every application whose `expires_at` is at or before `now`; returns how many.
    async fn delete_expired(&self, now: OffsetDateTime) -> Result<u64, RepoError>;
}
