//! The crypto adapter's per-token work, as the vault does it on every create and read:
//! AES-256-GCM encrypt + decrypt of a 64-byte token value through [`EnvelopeCipher`] (tenant
//! key from the cache, random nonce, versioned envelope, data context bound to tenant, token id
//! and field), beside a baseline of bare `aes-gcm` on the same bytes with a fixed key and nonce;
//! and the HMAC-SHA256 fingerprint (base58) of a card number, beside a bare HMAC baseline. Run
//! with `cargo bench -p tokenvault-crypto`; read each result as a ratio to its baseline from the
//! same run.

#![allow(missing_docs, clippy::unwrap_used)]

use futures_util::FutureExt as _;
use std::hint::black_box;

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use criterion::{Criterion, criterion_group, criterion_main};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokenvault_crypto::{EnvelopeCipher, MasterKey};
use tokenvault_domain::ports::Cipher;
use tokenvault_domain::token::data_context;
use uuid::Uuid;

/// A token value as the vault seals it (compact JSON of the data), exactly 64 bytes.
const VALUE: &[u8] = br#"{"number":"4242424242424242","expiration_month":12,"cvc":"1234"}"#;

/// What the vault fingerprints for a `card_number` token with its default expression
/// (`fingerprint_input` in the domain's sealing): a tag, then type, expression and rendered
/// text, each length-prefixed.
fn fingerprint_input() -> Vec<u8> {
    let mut input = b"tokenvault:fingerprint:v2".to_vec();
    for part in ["card_number", "{{ data }}", "4242424242424242"] {
        input.extend_from_slice(&u64::try_from(part.len()).unwrap().to_be_bytes());
        input.extend_from_slice(part.as_bytes());
    }
    input
}

/// A cipher with one tenant's key loaded, as after the vault's first use of that tenant.
fn loaded_cipher() -> (EnvelopeCipher, Uuid) {
    let cipher = EnvelopeCipher::new(MasterKey::from_bytes([7; 32]), vec![]);
    let tenant = Uuid::new_v4();
    // The local wrapping never waits: its futures are ready at once.
    let wrapped = cipher
        .new_tenant_key(tenant)
        .now_or_never()
        .unwrap()
        .unwrap();
    cipher
        .load_tenant_key(tenant, &wrapped)
        .now_or_never()
        .unwrap()
        .unwrap();
    (cipher, tenant)
}

fn encryption(c: &mut Criterion) {
    assert_eq!(VALUE.len(), 64);
    let (cipher, tenant) = loaded_cipher();
    let context = data_context(tenant, &Uuid::new_v4().to_string(), "data");

    let aead = Aes256Gcm::new_from_slice(&[9; 32]).unwrap();
    let nonce = Nonce::from([3; 12]);
    c.bench_function("baseline: aes-gcm encrypt + decrypt 64 bytes", |b| {
        b.iter(|| {
            let payload = Payload {
                msg: black_box(VALUE),
                aad: &context,
            };
            let sealed = aead.encrypt(&nonce, payload).unwrap();
            let payload = Payload {
                msg: &sealed,
                aad: &context,
            };
            aead.decrypt(&nonce, payload).unwrap()
        });
    });
    c.bench_function("envelope: encrypt + decrypt 64-byte token value", |b| {
        b.iter(|| {
            let sealed = cipher.encrypt(tenant, &context, black_box(VALUE)).unwrap();
            cipher.decrypt(tenant, &context, &sealed).unwrap()
        });
    });
    c.bench_function("envelope: encrypt 64-byte token value", |b| {
        b.iter(|| cipher.encrypt(tenant, &context, black_box(VALUE)).unwrap());
    });
    let sealed = cipher.encrypt(tenant, &context, VALUE).unwrap();
    c.bench_function("envelope: decrypt 64-byte token value", |b| {
        b.iter(|| {
            cipher
                .decrypt(tenant, &context, black_box(&sealed))
                .unwrap()
        });
    });
}

fn fingerprint(c: &mut Criterion) {
    let (cipher, tenant) = loaded_cipher();
    let input = fingerprint_input();

    let mac = <Hmac<Sha256> as hmac::KeyInit>::new_from_slice(&[5; 32]).unwrap();
    c.bench_function("baseline: HMAC-SHA256 of a fingerprint input", |b| {
        b.iter(|| {
            mac.clone()
                .chain_update(black_box(&input))
                .finalize()
                .into_bytes()
        });
    });
    c.bench_function("fingerprint of a card number (HMAC-SHA256, base58)", |b| {
        b.iter(|| cipher.fingerprint(tenant, black_box(&input)).unwrap());
    });
}

criterion_group!(benches, encryption, fingerprint);
criterion_main!(benches);
