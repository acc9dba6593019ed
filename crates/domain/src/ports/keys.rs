//! Generation and hashing of the keys the vault hands out, and the clock.

use time::OffsetDateTime;
use uuid::Uuid;

use crate::application::{ApiKey, KeyHash};
use crate::proxy::ProxyKey;
use crate::session::Nonce;

/// Generation and hashing of API keys.
pub trait KeyService: Send + Sync {
    /// A fresh random key.
    fn generate(&self) -> ApiKey;
    /// The digest stored in place of the key; keys are found by it in storage, so no key is
    /// ever compared in process.
    fn hash(&self, key: &ApiKey) -> KeyHash;
    /// A fresh random proxy key.
    fn generate_proxy_key(&self) -> ProxyKey;
    /// The digest a proxy is found by (in a domain of its own: never equal to an API key's).
    fn hash_proxy_key(&self, key: &ProxyKey) -> KeyHash;
    /// A fresh random session nonce.
    fn generate_nonce(&self) -> Nonce;
    /// The digest a nonce is found by (in a domain of its own).
    fn hash_nonce(&self, nonce: &Nonce) -> KeyHash;
}

/// The time and identifiers of new resources.
pub trait Clock: Send + Sync {
    /// Now, in UTC, at microsecond precision (what the databases keep).
    fn now(&self) -> OffsetDateTime;
    /// A new time-ordered identifier.
    fn new_id(&self) -> Uuid;
    /// Ready once `duration` has passed: the bound on a wait (a request waiting for room in its
    /// tenant's audit log).
    fn sleep(&self, duration: std::time::Duration) -> futures_util::future::BoxFuture<'static, ()>;
}
