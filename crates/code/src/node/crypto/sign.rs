//! The host functions under Node's `createSign`/`createVerify` and `crypto.sign`/`verify`
//! (`crypto.js`): ECDSA on P-256 with SHA-256 (RustCrypto p256; RFC 6979 nonces;
//! signatures in DER as Node gives them), and RSA with SHA-1/-224/-256/-384/-512, PKCS#1 v1.5
//! (Node's default) or PSS (`padding: RSA_PKCS1_PSS_PADDING`; the salt as long as the digest
//! when signing, any salt when verifying unless `saltLength` names one). Keys: `keys.rs`.

use crate::worker::host_function::host_function;
use p256::ecdsa::Signature;
use p256::ecdsa::signature::{Signer, Verifier};
use rquickjs::{Ctx, Exception, Object, TypedArray};
use rsa::sha2::{Sha224, Sha256, Sha384, Sha512};

use super::hash::bytes;
use super::keys::{self, Private, Public};

/// Node's `RSA_PKCS1_PSS_PADDING`.
const PSS_PADDING: i32 = 6;

/// Installs `__sign(algorithm, keyPem, data, options)` (the signature) and
/// `__verify(algorithm, keyPem, data, signature, options)` (a boolean). `options`:
/// `{padding, saltLength}` as Node takes them beside the key.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> rquickjs::Result<()> {
    host.set("sign", host_function(ctx, sign)?)?;
    host.set("verify", host_function(ctx, verify)?)?;
    Ok(())
}

/// The digest an algorithm name means: `sha256`, `SHA256`, `RSA-SHA256`, `sha-256`, ….
#[derive(Clone, Copy, PartialEq, Eq)]
enum Digest {
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

fn digest(ctx: &Ctx<'_>, algorithm: &str) -> rquickjs::Result<Digest> {
    let name = algorithm.to_ascii_lowercase().replace('-', "");
    let name = name
        .strip_prefix("rsa")
        .or_else(|| name.strip_prefix("ecdsawith"))
        .unwrap_or(&name);
    Ok(match name {
        "sha1" => Digest::Sha1,
        "sha224" => Digest::Sha224,
        "sha256" => Digest::Sha256,
        "sha384" => Digest::Sha384,
        "sha512" => Digest::Sha512,
        _ => {
            return Err(Exception::throw_type(
                ctx,
                &format!("Invalid digest: {algorithm}"),
            ));
        }
    })
}

/// `padding` and `saltLength` of the options beside the key.
struct Options {
    pss: bool,
    salt: Option<usize>,
    /// `dsaEncoding: 'ieee-p1363'`: an ECDSA signature as r‖s (64 bytes), as JOSE wants it.
    p1363: bool,
}

fn options(options: Option<Object<'_>>) -> Options {
    let get = |name: &str| {
        options
            .as_ref()
            .and_then(|o| o.get::<_, Option<f64>>(name).ok().flatten())
    };
    Options {
        p1363: options
            .as_ref()
            .and_then(|o| o.get::<_, Option<String>>("dsaEncoding").ok().flatten())
            .is_some_and(|e| e == "ieee-p1363"),
        pss: options
            .as_ref()
            .and_then(|o| o.get::<_, Option<i32>>("padding").ok().flatten())
            == Some(PSS_PADDING),
        // Node's special lengths (-1 the digest's, -2 the largest or detected) and anything
        // not a small whole number mean the default.
        salt: get("saltLength")
            .filter(|s| s.fract() == 0.0 && (0.0..=1024.0).contains(s))
            // Checked just above: a whole number from 0 to 1024.
            .map(|s| {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let n = s as usize;
                n
            }),
    }
}

fn unsupported_ec(ctx: &Ctx<'_>, digest: Digest) -> rquickjs::Result<()> {
    if digest == Digest::Sha256 {
        Ok(())
    } else {
        Err(Exception::throw_type(
            ctx,
            "ECDSA keys sign with SHA-256 here (P-256 only)",
        ))
    }
}

fn sign<'js>(
    ctx: Ctx<'js>,
    algorithm: String,
    key: String,
    data: TypedArray<'js, u8>,
    opts: Option<Object<'js>>,
) -> rquickjs::Result<TypedArray<'js, u8>> {
    let digest = digest(&ctx, &algorithm)?;
    let opts = options(opts);
    let data = bytes(&data);
    let signature = match keys::private(&key) {
        Some(Private::Ec(key)) => {
            unsupported_ec(&ctx, digest)?;
            let signature: Signature = key.sign(&data);
            if opts.p1363 {
                signature.to_bytes().to_vec()
            } else {
                signature.to_der().as_bytes().to_vec()
            }
        }
        Some(Private::Rsa(key)) => rsa_sign(&key, digest, &opts, &data)
            .map_err(|e| Exception::throw_internal(&ctx, &format!("RSA signing failed: {e}")))?,
        None => {
            return Err(Exception::throw_type(
                &ctx,
                "the key is not an RSA or P-256 private key in PEM",
            ));
        }
    };
    TypedArray::new(ctx, signature)
}

fn rsa_sign(
    key: &rsa::PrivateKey,
    digest: Digest,
    opts: &Options,
    data: &[u8],
) -> rsa::Result<Vec<u8>> {
    macro_rules! with {
        ($d:ty) => {
            if opts.pss {
                key.pss_sign::<$d>(data)
            } else {
                key.pkcs1v15_sign::<$d>(data)
            }
        };
    }
    match digest {
        Digest::Sha1 => with!(sha1::Sha1),
        Digest::Sha224 => with!(Sha224),
        Digest::Sha256 => with!(Sha256),
        Digest::Sha384 => with!(Sha384),
        Digest::Sha512 => with!(Sha512),
    }
}

fn verify<'js>(
    ctx: Ctx<'js>,
    algorithm: String,
    key: String,
    data: TypedArray<'js, u8>,
    signature: TypedArray<'js, u8>,
    opts: Option<Object<'js>>,
) -> rquickjs::Result<bool> {
    let digest = digest(&ctx, &algorithm)?;
    let opts = options(opts);
    let (data, signature) = (bytes(&data), bytes(&signature));
    match keys::public(&key) {
        Some(Public::Ec(key)) => {
            unsupported_ec(&ctx, digest)?;
            let parsed =
                Signature::from_der(&signature).or_else(|_| Signature::from_slice(&signature));
            Ok(parsed.is_ok_and(|s| key.verify(&data, &s).is_ok()))
        }
        Some(Public::Rsa(key)) => Ok(rsa_verify(*key, digest, &opts, &data, &signature)),
        None => Err(Exception::throw_type(
            &ctx,
            "the key is not an RSA or P-256 key in PEM",
        )),
    }
}

fn rsa_verify(
    key: rsa::PublicKey,
    digest: Digest,
    opts: &Options,
    data: &[u8],
    signature: &[u8],
) -> bool {
    macro_rules! with {
        ($d:ty) => {
            if opts.pss {
                let Ok(signature) = rsa::pss::Signature::try_from(signature) else {
                    return false;
                };
                let verifying = match opts.salt {
                    Some(salt) => rsa::pss::VerifyingKey::<$d>::new_with_salt_len(key, salt),
                    None => rsa::pss::VerifyingKey::<$d>::new_with_auto_salt_len(key),
                };
                verifying.verify(data, &signature).is_ok()
            } else {
                key.pkcs1v15_verify::<$d>(data, signature).is_ok()
            }
        };
    }
    match digest {
        Digest::Sha1 => with!(sha1::Sha1),
        Digest::Sha224 => with!(Sha224),
        Digest::Sha256 => with!(Sha256),
        Digest::Sha384 => with!(Sha384),
        Digest::Sha512 => with!(Sha512),
    }
}
