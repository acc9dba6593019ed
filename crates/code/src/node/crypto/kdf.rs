//! The host functions under Node's `hkdfSync`/`hkdf` and `pbkdf2Sync`/`pbkdf2`
//! (`crypto.js`): RustCrypto's hkdf and pbkdf2 over HMAC with SHA-1 to SHA-512.

use crate::worker::host_function::host_function;
use rquickjs::{Ctx, Exception, Object, TypedArray};
use sha2::{Sha224, Sha256, Sha384, Sha512};

use super::hash::bytes;

/// The longest key either derives (HKDF itself stops at 255 digests).
const MAX_KEY: u32 = 1 << 16;
/// The most PBKDF2 iterations one call may ask (beyond, the call's deadline would end it).
const MAX_ITERATIONS: u32 = 10_000_000;

/// Installs `__hkdf(digest, ikm, salt, info, length)` and
/// `__pbkdf2(digest, password, salt, iterations, length)`, each answering the derived key.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> rquickjs::Result<()> {
    host.set("hkdf", host_function(ctx, hkdf)?)?;
    host.set("pbkdf2", host_function(ctx, pbkdf2)?)?;
    Ok(())
}

fn digest_name(ctx: &Ctx<'_>, name: &str) -> rquickjs::Result<String> {
    let name = name.to_ascii_lowercase().replace('-', "");
    if ["sha1", "sha224", "sha256", "sha384", "sha512"].contains(&name.as_str()) {
        Ok(name)
    } else {
        Err(Exception::throw_type(
            ctx,
            &format!("Invalid digest: {name}"),
        ))
    }
}

fn length(ctx: &Ctx<'_>, length: f64) -> rquickjs::Result<usize> {
    if length.fract() != 0.0 || !(0.0..=f64::from(MAX_KEY)).contains(&length) {
        return Err(Exception::throw_range(
            ctx,
            &format!("The key length must be a whole number from 0 to {MAX_KEY}"),
        ));
    }
    // Checked just above: a whole number from 0 to MAX_KEY.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let n = length as usize;
    Ok(n)
}

fn hkdf<'js>(
    ctx: Ctx<'js>,
    digest: String,
    ikm: TypedArray<'js, u8>,
    salt: TypedArray<'js, u8>,
    info: TypedArray<'js, u8>,
    size: f64,
) -> rquickjs::Result<TypedArray<'js, u8>> {
    let digest = digest_name(&ctx, &digest)?;
    let size = length(&ctx, size)?;
    let (ikm, salt, info) = (bytes(&ikm), bytes(&salt), bytes(&info));
    let mut out = vec![0u8; size];
    macro_rules! with {
        ($d:ty) => {
            hkdf::Hkdf::<$d>::new(Some(&salt), &ikm).expand(&info, &mut out)
        };
    }
    let expanded = match digest.as_str() {
        "sha1" => with!(sha1::Sha1),
        "sha224" => with!(Sha224),
        "sha256" => with!(Sha256),
        "sha384" => with!(Sha384),
        _ => with!(Sha512),
    };
    expanded.map_err(|_| Exception::throw_range(&ctx, "Invalid key length for this digest"))?;
    TypedArray::new(ctx, out)
}

fn pbkdf2<'js>(
    ctx: Ctx<'js>,
    digest: String,
    password: TypedArray<'js, u8>,
    salt: TypedArray<'js, u8>,
    iterations: f64,
    size: f64,
) -> rquickjs::Result<TypedArray<'js, u8>> {
    let digest = digest_name(&ctx, &digest)?;
    let size = length(&ctx, size)?;
    if iterations.fract() != 0.0 || !(1.0..=f64::from(MAX_ITERATIONS)).contains(&iterations) {
        return Err(Exception::throw_range(
            &ctx,
            &format!("The iterations must be a whole number from 1 to {MAX_ITERATIONS}"),
        ));
    }
    // Checked just above: a whole number from 1 to MAX_ITERATIONS.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let rounds = iterations as u32;
    let (password, salt) = (bytes(&password), bytes(&salt));
    let mut out = vec![0u8; size];
    macro_rules! with {
        ($d:ty) => {
            pbkdf2::pbkdf2_hmac::<$d>(&password, &salt, rounds, &mut out)
        };
    }
    match digest.as_str() {
        "sha1" => with!(sha1::Sha1),
        "sha224" => with!(Sha224),
        "sha256" => with!(Sha256),
        "sha384" => with!(Sha384),
        _ => with!(Sha512),
    }
    TypedArray::new(ctx, out)
}
