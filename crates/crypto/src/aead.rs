//! AES-256-GCM sealing with a random 96-bit nonce: `version ‖ prefix ‖ nonce ‖ ciphertext+tag`,
//! shared by the tenant keys' wrapping (`master_key.rs`) and the token fields (`envelope.rs`).

use aes_gcm::aead::{Aead, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use tokenvault_domain::ports::CipherError;

const NONCE_LEN: usize = 12;

fn random_nonce() -> [u8; NONCE_LEN] {
    let mut n = [0u8; NONCE_LEN];
    rand::fill(&mut n);
    n
}

pub(crate) fn seal(
    cipher: &Aes256Gcm,
    aad: &[u8],
    plaintext: &[u8],
    version: u8,
    prefix: &[u8],
) -> Vec<u8> {
    let nonce = random_nonce();
    let ct = cipher
        .encrypt(
            &Nonce::from(nonce),
            Payload {
                msg: plaintext,
                aad,
            },
        )
        .expect("AES-GCM encryption does not fail for in-memory buffers");
    let mut out = Vec::with_capacity(1 + prefix.len() + NONCE_LEN + ct.len());
    out.push(version);
    out.extend_from_slice(prefix);
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&ct);
    out
}

pub(crate) fn open(
    cipher: &Aes256Gcm,
    aad: &[u8],
    nonce_and_ct: &[u8],
) -> Result<Vec<u8>, CipherError> {
    if nonce_and_ct.len() < NONCE_LEN + 16 {
        return Err(CipherError::Corrupt);
    }
    let (nonce, ct) = nonce_and_ct.split_at(NONCE_LEN);
    let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| CipherError::Corrupt)?;
    cipher
        .decrypt(&Nonce::from(nonce), Payload { msg: ct, aad })
        .map_err(|_| CipherError::Corrupt)
}
