//! Node's `crypto` (`crypto.js`) and the host functions under it, each a RustCrypto
//! implementation: digests, HMACs and random bytes (`hash.rs`), ciphers (`cipher.rs`),
//! signatures (`sign.rs`), public-key encryption (`seal.rs`), keys in PEM (`keys.rs`), key
//! derivation (`kdf.rs`) and key agreement (`ecdh.rs`).

mod cipher;
mod ecdh;
pub(crate) mod hash;
mod kdf;
mod keys;
mod seal;
mod sign;
#[cfg(test)]
mod tests;

use rquickjs::{Ctx, Object};

/// Makes every host function under `crypto.js` on `host`.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> rquickjs::Result<()> {
    hash::install(ctx, host)?;
    cipher::install(ctx, host)?;
    sign::install(ctx, host)?;
    seal::install(ctx, host)?;
    keys::install(ctx, host)?;
    kdf::install(ctx, host)?;
    ecdh::install(ctx, host)
}
