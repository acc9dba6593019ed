//! Crypto adapter: API key generation (OS randomness) and hashing (SHA-256) behind the
//! domain's [`KeyService`] port, envelope encryption of token data behind [`Cipher`], and
//! every master-key wrapper behind `KeyWrapping`: the local master key (`master_key.rs`), a
//! chain of current and previous wrappers (`chain.rs`) and a HashiCorp Vault / OpenBao Transit
//! key (`transit.rs`).
//!
//! [`Cipher`]: tokenvault_domain::ports::Cipher

mod aead;
mod chain;
mod envelope;
mod master_key;
pub mod transit;

pub use chain::WrappingChain;
pub use envelope::EnvelopeCipher;
pub use master_key::{LocalMasterKeys, MasterKey};

use rand::RngExt;
use sha2::{Digest, Sha256};
use tokenvault_domain::application::{ApiKey, KeyHash};
use tokenvault_domain::ports::KeyService;
use tokenvault_domain::proxy::ProxyKey;
use tokenvault_domain::session::Nonce;

const BASE62: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// `key_` + 32 base62 characters from the thread-local CSPRNG; SHA-256 digests.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sha256KeyService;

/// `n` random base62 characters (uniform: sampled by index, not by modulo of a byte).
pub fn random_base62(n: usize) -> String {
    let mut rng = rand::rng();
    (0..n)
        .map(|_| char::from(BASE62[rng.random_range(0..BASE62.len())]))
        .collect()
}

impl KeyService for Sha256KeyService {
    fn generate(&self) -> ApiKey {
        let key = format!("{}{}", ApiKey::PREFIX, random_base62(ApiKey::RANDOM_LEN));
        ApiKey::parse(&key).expect("generated keys have the key format")
    }

    fn hash(&self, key: &ApiKey) -> KeyHash {
        KeyHash(Sha256::digest(key.expose().as_bytes()).into())
    }

    fn generate_proxy_key(&self) -> ProxyKey {
        ProxyKey::parse(&random_base62(ProxyKey::LEN)).expect("generated keys have the key format")
    }

    fn hash_proxy_key(&self, key: &ProxyKey) -> KeyHash {
        // Prefixed: a proxy key's digest is never an API key's.
        let mut digest = Sha256::new();
        digest.update(b"tokenvault proxy key\0");
        digest.update(key.expose().as_bytes());
        KeyHash(digest.finalize().into())
    }

    fn generate_nonce(&self) -> Nonce {
        Nonce::parse(&random_base62(Nonce::LEN)).expect("generated nonces have the nonce format")
    }

    fn hash_nonce(&self, nonce: &Nonce) -> KeyHash {
        let mut digest = Sha256::new();
        digest.update(b"tokenvault session nonce\0");
        digest.update(nonce.expose().as_bytes());
        KeyHash(digest.finalize().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_have_the_format_and_differ() {
        let keys = Sha256KeyService;
        let a = keys.generate();
        let b = keys.generate();
        assert!(ApiKey::parse(a.expose()).is_some());
        assert_eq!(a.expose().len(), 36);
        assert_ne!(a, b);
    }

    #[test]
    fn hash_is_sha256() {
        let keys = Sha256KeyService;
        let key = ApiKey::parse("key_0123456789abcdefghijABCDEFGHIJkl").unwrap();
        let h = keys.hash(&key);
        assert_eq!(
            hex::encode(h.0),
            hex::encode(Sha256::digest(key.expose().as_bytes()))
        );
        assert_eq!(h, keys.hash(&key));
        assert_ne!(h, keys.hash(&keys.generate()));
    }
}
