//! The local master key (`TOKENVAULT_MASTER_KEY`): AES-256-GCM wrapping of tenant data keys,
//! each wrapped form naming its key by a short id, so a rotation's previous keys still unwrap.
//! The other [`KeyWrapping`] is a key manager's (Transit, `tokenvault-outbound`).

use std::fmt;

use aes_gcm::Aes256Gcm;
use aes_gcm::aead::KeyInit;
use async_trait::async_trait;
use base64::Engine as _;
use sha2::{Digest, Sha256};
use tokenvault_domain::ports::{CipherError, KeyWrapping};
use zeroize::Zeroizing;

use crate::aead::{open, seal};

/// The first byte of a key wrapped by a local master key.
const WRAP_VERSION: u8 = 1;
pub(crate) const ID_LEN: usize = 8;

/// A 256-bit master key and its short identifier (a hash prefix, safe to store).
#[derive(Clone)]
pub struct MasterKey {
    id: [u8; ID_LEN],
    key: Zeroizing<[u8; 32]>,
}

impl fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MasterKey({})", hex::encode(self.id))
    }
}

impl MasterKey {
    /// From 32 raw bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        let digest = Sha256::digest([b"tokenvault-master-key-id".as_slice(), &bytes].concat());
        let mut id = [0u8; ID_LEN];
        id.copy_from_slice(&digest[..ID_LEN]);
        Self {
            id,
            key: Zeroizing::new(bytes),
        }
    }

    /// From standard base64 of exactly 32 bytes (surrounding whitespace ignored).
    pub fn from_base64(text: &str) -> Result<Self, String> {
        let raw = Zeroizing::new(
            base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .map_err(|_| "the master key is not valid base64".to_string())?,
        );
        let bytes: [u8; 32] = raw
            .as_slice()
            .try_into()
            .map_err(|_| "the master key must be 32 bytes".to_string())?;
        Ok(Self::from_bytes(bytes))
    }

    /// A fresh random key, as base64 (for development mode and rotation).
    pub fn generate_base64() -> Zeroizing<String> {
        let mut bytes = Zeroizing::new([0u8; 32]);
        rand::fill(&mut *bytes);
        Zeroizing::new(base64::engine::general_purpose::STANDARD.encode(*bytes))
    }

    /// The identifier stored with keys wrapped by it.
    pub fn id_hex(&self) -> String {
        hex::encode(self.id)
    }

    pub(crate) fn aead(&self) -> Aes256Gcm {
        Aes256Gcm::new_from_slice(self.key.as_slice()).expect("32-byte key")
    }
}

/// Local master keys as the [`KeyWrapping`] port: wraps under `current`, unwraps under it or
/// any of `previous` (during a rotation).
#[derive(Debug)]
pub struct LocalMasterKeys {
    current: MasterKey,
    previous: Vec<MasterKey>,
}

impl LocalMasterKeys {
    /// `current` wraps; `current` and `previous` unwrap.
    pub fn new(current: MasterKey, previous: Vec<MasterKey>) -> Self {
        Self { current, previous }
    }

    fn master(&self, id: &[u8]) -> Option<&MasterKey> {
        std::iter::once(&self.current)
            .chain(self.previous.iter())
            .find(|m| m.id.as_slice() == id)
    }
}

#[async_trait]
impl KeyWrapping for LocalMasterKeys {
    async fn wrap(&self, context: &[u8], key: &[u8]) -> Result<Vec<u8>, CipherError> {
        Ok(seal(
            &self.current.aead(),
            context,
            key,
            WRAP_VERSION,
            &self.current.id,
        ))
    }

    async fn unwrap(&self, context: &[u8], wrapped: &[u8]) -> Result<Vec<u8>, CipherError> {
        if wrapped.len() < 1 + ID_LEN || wrapped[0] != WRAP_VERSION {
            // Not a local wrapping (a key manager's, or garbage).
            return Err(CipherError::UnknownMasterKey);
        }
        let master = self
            .master(&wrapped[1..=ID_LEN])
            .ok_or(CipherError::UnknownMasterKey)?;
        open(&master.aead(), context, &wrapped[1 + ID_LEN..])
    }

    async fn is_current(&self, wrapped: &[u8]) -> Result<bool, CipherError> {
        Ok(wrapped.first() == Some(&WRAP_VERSION)
            && wrapped.get(1..=ID_LEN) == Some(self.current.id.as_slice()))
    }
}
