//! The host function under Node's `createSign`/`createVerify` and `crypto.sign`/`verify`
//! (`node/crypto.js`): ECDSA on P-256 with SHA-256 (RustCrypto p256; RFC 6979 nonces), keys in
//! PEM (PKCS#8 or SEC1 private keys, SPKI public keys), signatures in DER as Node gives them.

use p256::ecdsa::signature::{Signer, Verifier};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rquickjs::{Ctx, Exception, Function, TypedArray};

use crate::hash::bytes;

/// Installs `__sign(algorithm, keyPem, data)` (a DER signature) and
/// `__verify(algorithm, keyPem, data, signature)` (a boolean).
pub fn install(ctx: &Ctx<'_>) -> rquickjs::Result<()> {
    let globals = ctx.globals();
    globals.set("__sign", Function::new(ctx.clone(), sign)?)?;
    globals.set("__verify", Function::new(ctx.clone(), verify)?)?;
    Ok(())
}

fn supported(ctx: &Ctx<'_>, algorithm: &str) -> rquickjs::Result<()> {
    match algorithm.to_ascii_lowercase().replace('-', "").as_str() {
        "sha256" | "ecdsawithsha256" => Ok(()),
        _ => Err(Exception::throw_type(
            ctx,
            &format!(
                "Unsupported signature algorithm here: {algorithm} (ECDSA P-256 with SHA-256 only)"
            ),
        )),
    }
}

fn signing_key(pem: &str) -> Option<SigningKey> {
    if let Ok(key) = SigningKey::from_pkcs8_pem(pem) {
        return Some(key);
    }
    p256::SecretKey::from_sec1_pem(pem)
        .ok()
        .map(SigningKey::from)
}

fn sign<'js>(
    ctx: Ctx<'js>,
    algorithm: String,
    key: String,
    data: TypedArray<'js, u8>,
) -> rquickjs::Result<TypedArray<'js, u8>> {
    supported(&ctx, &algorithm)?;
    let Some(key) = signing_key(&key) else {
        return Err(Exception::throw_type(
            &ctx,
            "the key is not a P-256 private key in PEM",
        ));
    };
    let signature: Signature = key.sign(&bytes(&data));
    TypedArray::new(ctx, signature.to_der().as_bytes().to_vec())
}

fn verify<'js>(
    ctx: Ctx<'js>,
    algorithm: String,
    key: String,
    data: TypedArray<'js, u8>,
    signature: TypedArray<'js, u8>,
) -> rquickjs::Result<bool> {
    supported(&ctx, &algorithm)?;
    let verifying = match VerifyingKey::from_public_key_pem(&key) {
        Ok(k) => k,
        // Node verifies with a private key's public half too.
        Err(_) => match signing_key(&key) {
            Some(k) => *k.verifying_key(),
            None => {
                return Err(Exception::throw_type(
                    &ctx,
                    "the key is not a P-256 key in PEM",
                ));
            }
        },
    };
    let signature = bytes(&signature);
    let parsed = Signature::from_der(&signature).or_else(|_| Signature::from_slice(&signature));
    Ok(parsed.is_ok_and(|s| verifying.verify(&bytes(&data), &s).is_ok()))
}
