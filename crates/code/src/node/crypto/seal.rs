//! The host function under Node's `publicEncrypt` and `privateDecrypt` (`crypto.js`):
//! RSA with OAEP (Node's default; `oaepHash` SHA-1 unless named) or PKCS#1 v1.5
//! (`padding: RSA_PKCS1_PADDING`), by RustCrypto's `rsa`, whose arithmetic is constant-time.
//! Keys: `keys.rs`.

use crate::worker::host_function::host_function;
use rquickjs::{Ctx, Exception, Object, TypedArray};
use rsa::sha2::{Sha224, Sha256, Sha384, Sha512};

use super::hash::bytes;
use super::keys::{self, Private, Public};

/// Node's `RSA_PKCS1_PADDING`.
const PKCS1_PADDING: i32 = 1;

/// Installs `__seal(encrypt, keyPem, data, options)`: encrypts with the public key (or a
/// private key's public half) or decrypts with the private key. `options`: `{padding,
/// oaepHash}`.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> rquickjs::Result<()> {
    host.set("seal", host_function(ctx, seal)?)
}

fn seal<'js>(
    ctx: Ctx<'js>,
    encrypt: bool,
    key: String,
    data: TypedArray<'js, u8>,
    options: Option<Object<'js>>,
) -> rquickjs::Result<TypedArray<'js, u8>> {
    let padding: Option<i32> = options
        .as_ref()
        .and_then(|o| o.get::<_, Option<i32>>("padding").ok().flatten());
    let pkcs1 = padding == Some(PKCS1_PADDING);
    let hash: String = options
        .as_ref()
        .and_then(|o| o.get::<_, Option<String>>("oaepHash").ok().flatten())
        .unwrap_or_else(|| "sha1".into());
    let hash = hash.to_ascii_lowercase().replace('-', "");
    if !["sha1", "sha224", "sha256", "sha384", "sha512"].contains(&hash.as_str()) {
        return Err(Exception::throw_type(
            &ctx,
            &format!("Invalid OAEP digest: {hash}"),
        ));
    }
    let data = bytes(&data);
    let out = if encrypt {
        let Some(Public::Rsa(key)) = keys::public(&key) else {
            return Err(Exception::throw_type(
                &ctx,
                "the key is not an RSA key in PEM",
            ));
        };
        public_encrypt(&key, pkcs1, &hash, &data)
    } else {
        let Some(Private::Rsa(key)) = keys::private(&key) else {
            return Err(Exception::throw_type(
                &ctx,
                "the key is not an RSA private key in PEM",
            ));
        };
        private_decrypt(&key, pkcs1, &hash, &data)
    };
    let out = out.map_err(|e| {
        let what = if encrypt { "encryption" } else { "decryption" };
        Exception::throw_internal(&ctx, &format!("RSA {what} failed: {e}"))
    })?;
    TypedArray::new(ctx, out)
}

macro_rules! by_hash {
    ($hash:expr, $call:ident) => {
        match $hash {
            "sha224" => $call!(Sha224),
            "sha256" => $call!(Sha256),
            "sha384" => $call!(Sha384),
            "sha512" => $call!(Sha512),
            _ => $call!(sha1::Sha1),
        }
    };
}

fn public_encrypt(
    key: &rsa::PublicKey,
    pkcs1: bool,
    hash: &str,
    data: &[u8],
) -> rsa::Result<Vec<u8>> {
    if pkcs1 {
        return key.pkcs1v15_encrypt(data);
    }
    macro_rules! oaep {
        ($d:ty) => {
            key.oaep_encrypt::<$d>(data)
        };
    }
    by_hash!(hash, oaep)
}

fn private_decrypt(
    key: &rsa::PrivateKey,
    pkcs1: bool,
    hash: &str,
    data: &[u8],
) -> rsa::Result<Vec<u8>> {
    if pkcs1 {
        return key.pkcs1v15_decrypt(data);
    }
    macro_rules! oaep {
        ($d:ty) => {
            key.oaep_decrypt::<$d>(data)
        };
    }
    by_hash!(hash, oaep)
}
