//! Storage of proxies. Every read and write but the key lookup is confined to one tenant.

use async_trait::async_trait;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::application::KeyHash;
use crate::error::RepoError;
use crate::page::{Page, PageRequest};
use crate::ports::Beside;
use crate::proxy::Proxy;
use crate::token::StoredToken;

/// A proxy as stored: its key only as a hash (for the lookup) and as ciphertext under the
/// tenant's data key (to show it again).
#[derive(Clone, Debug)]
pub struct StoredProxy {
    /// Every field but the key.
    pub proxy: Proxy,
    /// SHA-256 of the key, unique.
    pub key_hash: KeyHash,
    /// The key encrypted under the tenant's data key.
    pub key_ciphertext: Vec<u8>,
}

/// Storage of proxies.
///
/// # Errors
/// `RepoError::Conflict` on a duplicate id or key; `RepoError::Backend` for any storage failure.
#[async_trait]
pub trait ProxyRepository: Send + Sync {
    /// Stores a new proxy.
    async fn insert(&self, proxy: &StoredProxy) -> Result<(), RepoError>;
    /// The proxy, if the tenant has it.
    async fn get(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<StoredProxy>, RepoError>;
    /// The proxy whose key has this hash, in any tenant (invocation).
    async fn find_by_key_hash(&self, hash: &KeyHash) -> Result<Option<StoredProxy>, RepoError>;

    /// What [`Self::find_by_key_hash`] finds and, where the database reads ahead, the live
    /// tokens among `token_ids` of that proxy's tenant (the tenant taken from the proxy's row),
    /// read only where they may be used: the proxy requires no auth and has an application, or
    /// it requires auth and `caller_key` is the key of a live private application of its
    /// tenant. The list holds no token where they may not be used, so a caller relies on it
    /// only when it holds every id. Reading nothing ahead is always correct: the caller reads
    /// the tokens again once authorized.
    async fn find_by_key_hash_also(
        &self,
        hash: &KeyHash,
        caller_key: Option<&KeyHash>,
        token_ids: &[String],
        now: OffsetDateTime,
    ) -> Result<Option<(StoredProxy, Beside<Vec<StoredToken>>)>, RepoError> {
        let _ = (caller_key, token_ids, now);
        Ok(self
            .find_by_key_hash(hash)
            .await?
            .map(|proxy| (proxy, Beside::NotRead)))
    }
    /// A page of the tenant's proxies, newest first, optionally only these ids and only names
    /// containing `name` (case-insensitive).
    async fn list(
        &self,
        tenant_id: Uuid,
        ids: &[Uuid],
        name: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<StoredProxy>, RepoError>;
    /// Replaces every mutable field (never the key); `false` when the proxy is gone.
    async fn update(&self, proxy: &StoredProxy) -> Result<bool, RepoError>;
    /// Deletes the proxy; `false` when it did not exist.
    async fn delete(&self, tenant_id: Uuid, id: Uuid) -> Result<bool, RepoError>;
}
