//! The host functions under Node's `crypto` (`crypto.js`): digests and HMACs of the hashes
//! Node names `md5`, `sha1`, `sha224`, `sha256`, `sha384` and `sha512` (RustCrypto), and random
//! bytes from the kernel (`getrandom`, which the worker's sandbox allows).

use crate::worker::host_function::host_function;
use hmac::{Hmac, KeyInit, Mac};
use rquickjs::{Ctx, Exception, Object, TypedArray, Value};
use sha2::Digest;

/// The most random bytes one call of `__random` makes (Node's `randomBytes` is bounded in JS
/// at the same size).
const MAX_RANDOM: usize = 1 << 20;

/// Installs `__digest(algorithm, key | null, data)` and `__random(size)`; the prelude takes
/// them off the global object.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> rquickjs::Result<()> {
    host.set("digest", host_function(ctx, digest)?)?;
    host.set("random", host_function(ctx, random)?)?;
    Ok(())
}

fn digest<'js>(
    ctx: Ctx<'js>,
    algorithm: String,
    key: Value<'js>,
    data: TypedArray<'js, u8>,
) -> rquickjs::Result<TypedArray<'js, u8>> {
    let data = bytes(&data);
    let out = if key.is_null() || key.is_undefined() {
        hash(&algorithm, &data)
    } else {
        let key = TypedArray::<u8>::from_value(key)?;
        hmac(&algorithm, &bytes(&key), &data)
    };
    match out {
        Some(out) => TypedArray::new(ctx, out),
        None => Err(Exception::throw_type(
            &ctx,
            &format!("Digest method not supported: {algorithm}"),
        )),
    }
}

fn random(ctx: Ctx<'_>, size: usize) -> rquickjs::Result<TypedArray<'_, u8>> {
    if size > MAX_RANDOM {
        return Err(Exception::throw_range(
            &ctx,
            "at most 1 MiB of random bytes at once",
        ));
    }
    let mut out = vec![0; size];
    getrandom::fill(&mut out)
        .map_err(|e| Exception::throw_internal(&ctx, &format!("no random bytes: {e}")))?;
    TypedArray::new(ctx, out)
}

/// A copy of the bytes of `array`.
pub(crate) fn bytes(array: &TypedArray<'_, u8>) -> Vec<u8> {
    // SAFETY: the slice is copied at once; no JavaScript runs while it is borrowed, so nothing
    // can detach or resize the buffer under it.
    #[allow(unsafe_code)]
    let view = unsafe { array.as_bytes() };
    view.map(<[u8]>::to_vec).unwrap_or_default()
}

fn hash(algorithm: &str, data: &[u8]) -> Option<Vec<u8>> {
    Some(match algorithm {
        "md5" => md5::Md5::digest(data).to_vec(),
        "sha1" => sha1::Sha1::digest(data).to_vec(),
        "sha224" => sha2::Sha224::digest(data).to_vec(),
        "sha256" => sha2::Sha256::digest(data).to_vec(),
        "sha384" => sha2::Sha384::digest(data).to_vec(),
        "sha512" => sha2::Sha512::digest(data).to_vec(),
        _ => return None,
    })
}

fn hmac(algorithm: &str, key: &[u8], data: &[u8]) -> Option<Vec<u8>> {
    fn mac<M: Mac + KeyInit>(key: &[u8], data: &[u8]) -> Option<Vec<u8>> {
        let mut m = <M as KeyInit>::new_from_slice(key).ok()?;
        m.update(data);
        Some(m.finalize().into_bytes().to_vec())
    }
    match algorithm {
        "md5" => mac::<Hmac<md5::Md5>>(key, data),
        "sha1" => mac::<Hmac<sha1::Sha1>>(key, data),
        "sha224" => mac::<Hmac<sha2::Sha224>>(key, data),
        "sha256" => mac::<Hmac<sha2::Sha256>>(key, data),
        "sha384" => mac::<Hmac<sha2::Sha384>>(key, data),
        "sha512" => mac::<Hmac<sha2::Sha512>>(key, data),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        use std::fmt::Write;
        bytes.iter().fold(String::new(), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
    }

    #[test]
    fn known_answers() {
        // RFC 4231 test case 2 and FIPS 180 "abc".
        let mac = hmac("sha256", b"Jefe", b"what do ya want for nothing?").unwrap_or_default();
        assert_eq!(
            hex(&mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let sha = hash("sha1", b"abc").unwrap_or_default();
        assert_eq!(hex(&sha), "a9993e364706816aba3e25717850c26c9cd0d89d");
        let md5 = hash("md5", b"").unwrap_or_default();
        assert_eq!(hex(&md5), "d41d8cd98f00b204e9800998ecf8427e");
        assert!(hash("sha3", b"").is_none());
    }
}
