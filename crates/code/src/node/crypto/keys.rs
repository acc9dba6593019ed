//! Keys in PEM as Node's `crypto` takes them, for signatures (`sign.rs`) and public-key
//! encryption (`seal.rs`): ECDSA P-256 (PKCS#8, SEC1 `EC PRIVATE KEY`, SPKI) and RSA (PKCS#8,
//! PKCS#1 `RSA PRIVATE KEY`/`RSA PUBLIC KEY`, SPKI). A public operation takes a private key too
//! (its public half), as Node does. Also `__keyInfo(pem)`, under `createPublicKey` and
//! `createPrivateKey`: the key's type and its public half in SPKI PEM.

use crate::worker::host_function::host_function;
use p256::ecdsa::{SigningKey, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey, LineEnding};
use rquickjs::{Ctx, Exception, Object};
use rsa::pkcs1::{DecodeRsaPrivateKey, DecodeRsaPublicKey};
use rsa::traits::PublicKeyParts;

/// The largest RSA modulus taken, in bytes (8,192 bits).
const MAX_RSA_BYTES: usize = 1024;

/// A private key.
pub(crate) enum Private {
    Ec(SigningKey),
    Rsa(Box<rsa::PrivateKey>),
}

/// A public key.
pub(crate) enum Public {
    Ec(VerifyingKey),
    Rsa(Box<rsa::PublicKey>),
}

/// The private key in `pem`, of either kind and any of the three private encodings.
pub(crate) fn private(pem: &str) -> Option<Private> {
    if let Ok(key) = SigningKey::from_pkcs8_pem(pem) {
        return Some(Private::Ec(key));
    }
    if let Ok(key) = p256::SecretKey::from_sec1_pem(pem) {
        return Some(Private::Ec(SigningKey::from(key)));
    }
    rsa::PrivateKey::from_pkcs8_pem(pem)
        .or_else(|_| rsa::PrivateKey::from_pkcs1_pem(pem))
        .ok()
        // As the crate bounds public keys: a larger private key's operations take seconds.
        .filter(|k| k.size() <= MAX_RSA_BYTES)
        .map(|k| Private::Rsa(Box::new(k)))
}

/// The public key in `pem`, or the public half of the private key in it.
pub(crate) fn public(pem: &str) -> Option<Public> {
    if let Ok(key) = VerifyingKey::from_public_key_pem(pem) {
        return Some(Public::Ec(key));
    }
    if let Ok(key) =
        rsa::PublicKey::from_public_key_pem(pem).or_else(|_| rsa::PublicKey::from_pkcs1_pem(pem))
    {
        return Some(Public::Rsa(Box::new(key)));
    }
    private(pem).map(|key| match key {
        Private::Ec(k) => Public::Ec(*k.verifying_key()),
        Private::Rsa(k) => Public::Rsa(Box::new(k.to_public_key())),
    })
}

/// Installs `__keyInfo(pem)`: `{type: 'private'|'public', asymmetricKeyType: 'ec'|'rsa',
/// publicPem}`; throws when `pem` holds no key of either kind.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> rquickjs::Result<()> {
    host.set("keyInfo", host_function(ctx, key_info)?)
}

fn key_info(ctx: Ctx<'_>, pem: String) -> rquickjs::Result<Object<'_>> {
    let is_private = private(&pem).is_some();
    let Some(key) = public(&pem) else {
        return Err(Exception::throw_type(
            &ctx,
            "the key is not an RSA or P-256 key in PEM",
        ));
    };
    let (kind, spki) = match key {
        Public::Ec(k) => ("ec", k.to_public_key_pem(LineEnding::LF)),
        Public::Rsa(k) => ("rsa", k.to_public_key_pem(LineEnding::LF)),
    };
    let spki = spki.map_err(|e| Exception::throw_type(&ctx, &e.to_string()))?;
    let info = Object::new(ctx)?;
    info.set("type", if is_private { "private" } else { "public" })?;
    info.set("asymmetricKeyType", kind)?;
    info.set("publicPem", spki)?;
    Ok(info)
}
