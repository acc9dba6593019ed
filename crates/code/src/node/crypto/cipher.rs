//! The host function under Node's `createCipheriv`/`createDecipheriv` (`crypto.js`):
//! AES-GCM (128/192/256-bit keys, 12- or 16-byte IVs, 16-byte tags), AES-CBC (PKCS#7 padding
//! or none) and AES-CTR (a 16-byte big-endian counter block, as OpenSSL's) from RustCrypto. The
//! whole message is handled at `final()`.

use crate::worker::host_function::host_function;
use aes::{Aes128, Aes192, Aes256};
use aes_gcm::AesGcm;
use aes_gcm::aead::consts::{U12, U16};
use aes_gcm::aead::{Aead, KeyInit, Nonce, Payload};
use cbc::cipher::block_padding::{NoPadding, Pkcs7};
use cbc::cipher::{BlockModeDecrypt, BlockModeEncrypt, KeyIvInit};
use rquickjs::{Ctx, Exception, Object, TypedArray, Value};

use super::hash::bytes;

/// The length of a GCM tag.
const TAG: usize = 16;

/// Installs `__cipher(encrypt, algorithm, key, iv, data, {aad, tag, padding})`:
/// the ciphertext (with the GCM tag after it) or the plaintext; a `TypeError` for an unknown
/// algorithm or a key or IV of the wrong length, an `Error` when a message does not
/// authenticate or unpad.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> rquickjs::Result<()> {
    host.set("cipher", host_function(ctx, cipher)?)
}

fn cipher<'js>(
    ctx: Ctx<'js>,
    encrypt: bool,
    algorithm: String,
    key: TypedArray<'js, u8>,
    iv: TypedArray<'js, u8>,
    data: TypedArray<'js, u8>,
    options: Object<'js>,
) -> rquickjs::Result<TypedArray<'js, u8>> {
    let aad: Value<'js> = options.get("aad")?;
    let tag: Value<'js> = options.get("tag")?;
    let padding: bool = options.get("padding")?;
    let optional = |v: Value<'js>| -> rquickjs::Result<Vec<u8>> {
        if v.is_null() || v.is_undefined() {
            Ok(Vec::new())
        } else {
            Ok(bytes(&TypedArray::<u8>::from_value(v)?))
        }
    };
    let (key, iv, data) = (bytes(&key), bytes(&iv), bytes(&data));
    let (aad, tag) = (optional(aad)?, optional(tag)?);
    let out = match algorithm.as_str() {
        "aes-128-gcm" | "aes-192-gcm" | "aes-256-gcm" => {
            gcm(&algorithm, encrypt, &key, &iv, &data, &aad, &tag)
        }
        "aes-128-cbc" | "aes-192-cbc" | "aes-256-cbc" => {
            cbc_mode(&algorithm, encrypt, &key, &iv, &data, padding)
        }
        "aes-128-ctr" | "aes-192-ctr" | "aes-256-ctr" => ctr_mode(&algorithm, &key, &iv, &data),
        _ => {
            return Err(Exception::throw_type(
                &ctx,
                &format!("Unknown cipher: {algorithm}"),
            ));
        }
    };
    match out {
        Ok(out) => TypedArray::new(ctx, out),
        Err(Failure::Invalid(why)) => Err(Exception::throw_type(&ctx, why)),
        Err(Failure::Refused(why)) => Err(Exception::throw_message(&ctx, why)),
    }
}

enum Failure {
    /// A key or IV of the wrong length (Node's TypeError / RangeError).
    Invalid(&'static str),
    /// A message that does not authenticate or unpad (Node's Error).
    Refused(&'static str),
}

fn gcm(
    algorithm: &str,
    encrypt: bool,
    key: &[u8],
    iv: &[u8],
    data: &[u8],
    aad: &[u8],
    tag: &[u8],
) -> Result<Vec<u8>, Failure> {
    fn run<C: Aead + KeyInit>(
        key: &[u8],
        iv: &[u8],
        encrypt: bool,
        data: &[u8],
        aad: &[u8],
        tag: &[u8],
    ) -> Result<Vec<u8>, Failure> {
        let c = C::new_from_slice(key).map_err(|_| Failure::Invalid("Invalid key length"))?;
        let nonce = Nonce::<C>::try_from(iv).map_err(|_| Failure::Invalid("Invalid IV length"))?;
        if encrypt {
            c.encrypt(&nonce, Payload { msg: data, aad })
                .map_err(|_| Failure::Refused("the message could not be encrypted"))
        } else {
            if tag.len() != TAG {
                return Err(Failure::Refused(
                    "Unsupported state or unable to authenticate data",
                ));
            }
            let mut sealed = data.to_vec();
            sealed.extend_from_slice(tag);
            c.decrypt(&nonce, Payload { msg: &sealed, aad })
                .map_err(|_| Failure::Refused("Unsupported state or unable to authenticate data"))
        }
    }
    match (algorithm, iv.len()) {
        ("aes-128-gcm", 12) => run::<AesGcm<Aes128, U12>>(key, iv, encrypt, data, aad, tag),
        ("aes-192-gcm", 12) => run::<AesGcm<Aes192, U12>>(key, iv, encrypt, data, aad, tag),
        ("aes-256-gcm", 12) => run::<AesGcm<Aes256, U12>>(key, iv, encrypt, data, aad, tag),
        ("aes-128-gcm", 16) => run::<AesGcm<Aes128, U16>>(key, iv, encrypt, data, aad, tag),
        ("aes-192-gcm", 16) => run::<AesGcm<Aes192, U16>>(key, iv, encrypt, data, aad, tag),
        ("aes-256-gcm", 16) => run::<AesGcm<Aes256, U16>>(key, iv, encrypt, data, aad, tag),
        _ => Err(Failure::Invalid(
            "Invalid IV length: GCM takes 12 or 16 bytes here",
        )),
    }
}

fn cbc_mode(
    algorithm: &str,
    encrypt: bool,
    key: &[u8],
    iv: &[u8],
    data: &[u8],
    padding: bool,
) -> Result<Vec<u8>, Failure> {
    fn run<C>(
        key: &[u8],
        iv: &[u8],
        encrypt: bool,
        data: &[u8],
        padding: bool,
    ) -> Result<Vec<u8>, Failure>
    where
        C: cbc::cipher::BlockCipherEncrypt + cbc::cipher::BlockCipherDecrypt + cbc::cipher::KeyInit,
    {
        let invalid = |_| Failure::Invalid("Invalid key or IV length");
        if encrypt {
            let e = cbc::Encryptor::<C>::new_from_slices(key, iv).map_err(invalid)?;
            if padding {
                Ok(e.encrypt_padded_vec::<Pkcs7>(data))
            } else if data.len().is_multiple_of(16) {
                Ok(e.encrypt_padded_vec::<NoPadding>(data))
            } else {
                Err(Failure::Refused("data not multiple of block length"))
            }
        } else {
            let d = cbc::Decryptor::<C>::new_from_slices(key, iv).map_err(invalid)?;
            let out = if padding {
                d.decrypt_padded_vec::<Pkcs7>(data)
            } else {
                d.decrypt_padded_vec::<NoPadding>(data)
            };
            out.map_err(|_| Failure::Refused("bad decrypt"))
        }
    }
    match algorithm {
        "aes-128-cbc" => run::<Aes128>(key, iv, encrypt, data, padding),
        "aes-192-cbc" => run::<Aes192>(key, iv, encrypt, data, padding),
        _ => run::<Aes256>(key, iv, encrypt, data, padding),
    }
}

/// CTR: the same keystream both ways.
fn ctr_mode(algorithm: &str, key: &[u8], iv: &[u8], data: &[u8]) -> Result<Vec<u8>, Failure> {
    use ctr::cipher::StreamCipher;
    let mut out = data.to_vec();
    let invalid = |_| Failure::Invalid("Invalid key or IV length");
    macro_rules! with {
        ($c:ty) => {
            ctr::Ctr128BE::<$c>::new_from_slices(key, iv)
                .map_err(invalid)?
                .apply_keystream(&mut out)
        };
    }
    match algorithm {
        "aes-128-ctr" => with!(Aes128),
        "aes-192-ctr" => with!(Aes192),
        _ => with!(Aes256),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap_or_default())
            .collect()
    }

    #[test]
    fn known_answers_and_round_trips() {
        // NIST SP 800-38A F.2.1, CBC-AES128, first block, no padding.
        let key = hex("2b7e151628aed2a6abf7158809cf4f3c");
        let iv = hex("000102030405060708090a0b0c0d0e0f");
        let plain = hex("6bc1bee22e409f96e93d7e117393172a");
        let out = cbc_mode("aes-128-cbc", true, &key, &iv, &plain, false).ok();
        assert_eq!(out, Some(hex("7649abac8119b246cee98e9b12e9197d")));
        // NIST SP 800-38A F.5.1, CTR-AES128, first block.
        let counter = hex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff");
        let out = ctr_mode("aes-128-ctr", &key, &counter, &plain).ok();
        assert_eq!(out, Some(hex("874d6191b620e3261bef6864990db6ce")));
        // GCM test case 2 of the GCM spec: zero key, zero IV, one zero block.
        let zero = [0u8; 16];
        let sealed = gcm("aes-128-gcm", true, &zero, &[0; 12], &zero, &[], &[])
            .ok()
            .unwrap_or_default();
        assert_eq!(sealed[..16], hex("0388dace60b6a392f328c2b971b2fe78")[..]);
        assert_eq!(sealed[16..], hex("ab6e47d42cec13bdf53a67b21257bddf")[..]);
        let opened = gcm(
            "aes-128-gcm",
            false,
            &zero,
            &[0; 12],
            &sealed[..16],
            &[],
            &sealed[16..],
        )
        .ok();
        assert_eq!(opened, Some(zero.to_vec()));
        // A changed tag does not authenticate.
        let mut bad = sealed[16..].to_vec();
        bad[0] ^= 1;
        assert!(
            gcm(
                "aes-128-gcm",
                false,
                &zero,
                &[0; 12],
                &sealed[..16],
                &[],
                &bad
            )
            .is_err()
        );
    }
}
