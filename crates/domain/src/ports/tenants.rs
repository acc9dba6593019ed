//! Storage of tenants: their settings and wrapped data keys, their delete (a tombstone) and
//! purge.

use async_trait::async_trait;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::application::{Application, KeyHash};
use crate::error::RepoError;
use crate::tenant::Tenant;

/// What every area needs of the tenants: their wrapped data keys, and whether one is live (a
/// write that met its tenant's delete). Apart from [`TenantRepository`], so that the areas
/// that only use a tenant's key never hold the tenants' management.
///
/// # Errors
/// `RepoError::Backend` for any storage failure.
#[async_trait]
pub trait TenantKeys: Send + Sync {
    /// The tenant's data key, wrapped by a master key.
    async fn data_key(&self, id: Uuid) -> Result<Option<Vec<u8>>, RepoError>;

    /// Every tenant's wrapped data key (master key rotation).
    async fn data_keys(&self) -> Result<Vec<(Uuid, Vec<u8>)>, RepoError>;

    /// Replaces a wrapped data key if it is still `old` (an empty `old` means "the tenant has
    /// none yet"); `false` otherwise.
    async fn replace_data_key(&self, id: Uuid, old: &[u8], new: &[u8]) -> Result<bool, RepoError>;

    /// Whether the tenant exists and is not deleted.
    async fn is_live(&self, id: Uuid) -> Result<bool, RepoError>;
}

/// Storage of tenants (their keys: [`TenantKeys`]).
///
/// # Errors
/// `RepoError::Conflict` on a duplicate identifier; `RepoError::Backend` for any storage failure.
#[async_trait]
pub trait TenantRepository: TenantKeys {
    /// Stores a new tenant, its wrapped data key and its first application, atomically.
    async fn create_with_application(
        &self,
        tenant: &Tenant,
        wrapped_data_key: &[u8],
        application: &Application,
        key_hash: &KeyHash,
    ) -> Result<(), RepoError>;

    /// The tenant, if it exists.
    async fn get(&self, id: Uuid) -> Result<Option<Tenant>, RepoError>;

    /// Replaces name, settings and modification fields; `false` when the tenant is gone.
    async fn update(&self, tenant: &Tenant) -> Result<bool, RepoError>;

    /// Deletes the tenant, deleted `at`, in the first of two steps: at once it is gone for
    /// every read, its data key is dropped and its API, session and proxy keys stop working;
    /// its other rows stay until [`Self::purge_deleted`] removes them. `false` when there was
    /// no such tenant.
    async fn delete(&self, id: Uuid, at: OffsetDateTime) -> Result<bool, RepoError>;

    /// The second step of [`Self::delete`]: removes at most `batch` rows of a deleted tenant,
    /// or the deleted tenant itself once nothing of it is left; how many rows went (0 when no
    /// deleted tenant is left, or none of its rows could be taken now: another instance holds
    /// them). Each call is short, so no other tenant waits on it.
    async fn purge_deleted(&self, batch: u64) -> Result<u64, RepoError>;

    /// Whether any tenant exists (first start detection).
    async fn any(&self) -> Result<bool, RepoError>;

    /// Every tenant, oldest first (the operator's `tenants list`).
    async fn list(&self) -> Result<Vec<Tenant>, RepoError>;
}
