//! Driven ports: what the use cases need from the outside world. Adapters implement them;
//! the domain never names an adapter.

use async_trait::async_trait;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::application::{ApiKey, Application, KeyHash};
use crate::error::RepoError;
use crate::page::{Page, PageRequest};
use crate::tenant::Tenant;

/// Storage of tenants.
///
/// # Errors
/// `RepoError::Conflict` on a duplicate identifier; `RepoError::Backend` for any storage failure.
#[async_trait]
pub trait TenantRepository: Send + Sync {
    /// Stores a new tenant together with its first application, atomically.
    async fn create_with_application(
        &self,
        tenant: &Tenant,
        application: &Application,
        key_hash: &KeyHash,
    ) -> Result<(), RepoError>;

    /// The tenant, if it exists.
    async fn get(&self, id: Uuid) -> Result<Option<Tenant>, RepoError>;

    /// Replaces name, settings and modification fields; `false` when the tenant is gone.
    async fn update(&self, tenant: &Tenant) -> Result<bool, RepoError>;

    /// Deletes the tenant and everything it owns; `false` when it did not exist.
    async fn delete(&self, id: Uuid) -> Result<bool, RepoError>;

    /// Whether any tenant exists (first start detection).
    async fn any(&self) -> Result<bool, RepoError>;
}

/// Storage of applications. Every read and write but the key lookup is confined to one tenant.
///
/// # Errors
/// `RepoError::Conflict` when a key hash or id is already taken; `RepoError::Backend` otherwise.
#[async_trait]
pub trait ApplicationRepository: Send + Sync {
    /// Stores a new application with the hash of its key.
    async fn insert(&self, application: &Application, key_hash: &KeyHash) -> Result<(), RepoError>;

    /// The application whose key has this hash.
    async fn find_by_key_hash(&self, hash: &KeyHash) -> Result<Option<Application>, RepoError>;

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

/// Generation and hashing of API keys.
pub trait KeyService: Send + Sync {
    /// A fresh random key.
    fn generate(&self) -> ApiKey;
    /// The digest stored in place of the key.
    fn hash(&self, key: &ApiKey) -> KeyHash;
    /// Constant-time equality of two digests.
    fn hashes_equal(&self, a: &KeyHash, b: &KeyHash) -> bool;
}

/// The time and identifiers of new resources.
pub trait Clock: Send + Sync {
    /// Now, in UTC, at microsecond precision (what the databases keep).
    fn now(&self) -> OffsetDateTime;
    /// A new time-ordered identifier.
    fn new_id(&self) -> Uuid;
}
