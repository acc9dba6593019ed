//! The host functions under Node's `createECDH('prime256v1')` and `diffieHellman`
//! (`crypto.js`): ECDH on P-256 with RustCrypto's p256, keys as Node gives them (a 32-byte
//! private scalar, an uncompressed or compressed SEC1 public point), or PEM for
//! `diffieHellman`'s KeyObjects. The shared secret is the x-coordinate, as in Node.

use crate::worker::host_function::host_function;
use p256::ecdh::diffie_hellman;
use p256::elliptic_curve::sec1::ToSec1Point;
use p256::{PublicKey, SecretKey};
use rquickjs::{Ctx, Exception, Object, TypedArray};

use super::hash::bytes;
use super::keys::{self, Private, Public};

/// Installs `__ecdhPublic(private, compressed)` (the public point of a private scalar),
/// `__ecdhSecret(private, peerPublic)` (the shared secret) and `__ecdhPem(privatePem,
/// publicPem)` (the same from PEM keys).
pub(crate) fn install<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> rquickjs::Result<()> {
    host.set("ecdhPublic", host_function(ctx, public)?)?;
    host.set("ecdhSecret", host_function(ctx, secret)?)?;
    host.set("ecdhPem", host_function(ctx, pem)?)?;
    Ok(())
}

fn scalar(ctx: &Ctx<'_>, private: &[u8]) -> rquickjs::Result<SecretKey> {
    SecretKey::from_slice(private)
        .map_err(|_| Exception::throw_message(ctx, "Private key is not valid for specified curve."))
}

fn public<'js>(
    ctx: Ctx<'js>,
    private: TypedArray<'js, u8>,
    compressed: bool,
) -> rquickjs::Result<TypedArray<'js, u8>> {
    let key = scalar(&ctx, &bytes(&private))?;
    let point = key.public_key().to_sec1_point(compressed);
    TypedArray::new(ctx, point.as_bytes().to_vec())
}

fn secret<'js>(
    ctx: Ctx<'js>,
    private: TypedArray<'js, u8>,
    peer: TypedArray<'js, u8>,
) -> rquickjs::Result<TypedArray<'js, u8>> {
    let key = scalar(&ctx, &bytes(&private))?;
    let peer = PublicKey::from_sec1_bytes(&bytes(&peer)).map_err(|_| {
        Exception::throw_message(&ctx, "Public key is not valid for specified curve")
    })?;
    let shared = diffie_hellman(key.to_nonzero_scalar(), peer.as_affine());
    TypedArray::new(ctx, shared.raw_secret_bytes().to_vec())
}

fn pem(ctx: Ctx<'_>, private: String, public: String) -> rquickjs::Result<TypedArray<'_, u8>> {
    let (Some(Private::Ec(private)), Some(Public::Ec(public))) =
        (keys::private(&private), keys::public(&public))
    else {
        return Err(Exception::throw_type(
            &ctx,
            "diffieHellman takes P-256 keys here (a private and a public KeyObject)",
        ));
    };
    let shared = diffie_hellman(private.as_nonzero_scalar(), public.as_affine());
    TypedArray::new(ctx, shared.raw_secret_bytes().to_vec())
}
