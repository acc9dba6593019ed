//! Envelope encryption of token data and the master key that wraps the tenants' data keys.

use async_trait::async_trait;
use uuid::Uuid;

/// Why a cipher operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CipherError {
    /// The tenant's key is not loaded yet.
    #[error("tenant key not loaded")]
    KeyNotLoaded,
    /// Authentication failed or the input is malformed (tampering, wrong key or context).
    #[error("decryption failed")]
    Corrupt,
    /// The wrapped key names a master key that is not configured.
    #[error("unknown master key")]
    UnknownMasterKey,
    /// The key manager holding the master key did not answer, or refused (its reason).
    #[error("key manager: {0}")]
    KeyManager(String),
}

/// The master key, which wraps and unwraps tenant data keys: a local key
/// (`tokenvault-crypto`) or a key manager holding it (Transit, `tokenvault-outbound`), so that
/// in the second case the master key never enters this process. Each wrapped form names the
/// key (and version) that made it.
#[async_trait]
pub trait KeyWrapping: Send + Sync + std::fmt::Debug {
    /// Wraps `key` under the current master key (version), bound to `context`.
    async fn wrap(&self, context: &[u8], key: &[u8]) -> Result<Vec<u8>, CipherError>;

    /// Unwraps what `wrap` made with the same context. [`CipherError::UnknownMasterKey`] when
    /// the wrapped form is not one of this wrapper's keys.
    async fn unwrap(&self, context: &[u8], wrapped: &[u8]) -> Result<Vec<u8>, CipherError>;

    /// Whether `wrapped` is under the current master key (version): rotation leaves it.
    async fn is_current(&self, wrapped: &[u8]) -> Result<bool, CipherError>;
}

/// Envelope encryption of token data: per-tenant data keys wrapped by the master key, cached
/// unwrapped in memory; fingerprints keyed per tenant.
#[async_trait]
pub trait Cipher: Send + Sync {
    /// A new random data key, wrapped under the current master key and bound to the tenant.
    async fn new_tenant_key(&self, tenant_id: Uuid) -> Result<Vec<u8>, CipherError>;
    /// Whether the tenant's key is cached.
    fn has_tenant_key(&self, tenant_id: Uuid) -> bool;
    /// Unwraps and caches the tenant's key.
    async fn load_tenant_key(&self, tenant_id: Uuid, wrapped: &[u8]) -> Result<(), CipherError>;
    /// Drops the tenant's key from the cache.
    fn forget_tenant_key(&self, tenant_id: Uuid);
    /// The tenants whose keys are cached.
    fn cached_tenant_keys(&self) -> Vec<Uuid>;
    /// Encrypts under the tenant's key, bound to `context` (AAD).
    fn encrypt(
        &self,
        tenant_id: Uuid,
        context: &[u8],
        plaintext: &[u8],
    ) -> Result<Vec<u8>, CipherError>;
    /// Decrypts what `encrypt` produced with the same context.
    fn decrypt(
        &self,
        tenant_id: Uuid,
        context: &[u8],
        ciphertext: &[u8],
    ) -> Result<Vec<u8>, CipherError>;
    /// Keyed hash (base58) of `input` under the tenant's fingerprint key.
    fn fingerprint(&self, tenant_id: Uuid, input: &[u8]) -> Result<String, CipherError>;
    /// Keyed hash (base58) of `input` under the tenant's search key, a key used for nothing
    /// else (blind index terms, `search_index.rs`): a term never equals a fingerprint.
    fn search_term(&self, tenant_id: Uuid, input: &[u8]) -> Result<String, CipherError>;
    /// Re-wraps a wrapped key under the current master key (rotation); `None` if already current.
    async fn rewrap(&self, tenant_id: Uuid, wrapped: &[u8])
    -> Result<Option<Vec<u8>>, CipherError>;
}
