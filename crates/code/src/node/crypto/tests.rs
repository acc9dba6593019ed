//! Node's `crypto` in the engine: hashes, ciphers, signatures and key agreement checked against
//! published answers or RustCrypto outside the engine.

use crate::worker::testing::*;

/// Node's ciphers give the published answers (NIST SP 800-38A CBC, the GCM spec's test
/// case 2) and round-trip; a changed tag does not authenticate.
#[test]
fn node_ciphers_give_published_answers() {
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(
        "const crypto = require('crypto');
         module.exports = () => {
           const cbc = crypto.createCipheriv('aes-128-cbc', Buffer.from('2b7e151628aed2a6abf7158809cf4f3c', 'hex'),
                                             Buffer.from('000102030405060708090a0b0c0d0e0f', 'hex'));
           cbc.setAutoPadding(false);
           const cbcHex = cbc.update(Buffer.from('6bc1bee22e409f96e93d7e117393172a', 'hex'), undefined, 'hex') + cbc.final('hex');
           const zero = Buffer.alloc(16);
           const gcm = crypto.createCipheriv('aes-128-gcm', zero, Buffer.alloc(12));
           const sealed = Buffer.concat([gcm.update(zero), gcm.final()]);
           const tag = gcm.getAuthTag();
           const key = crypto.randomBytes(32);
           const iv = crypto.randomBytes(12);
           const e = crypto.createCipheriv('aes-256-gcm', key, iv);
           e.setAAD(Buffer.from('header'));
           const ct = Buffer.concat([e.update('4242424242424242', 'utf8'), e.final()]);
           const d = crypto.createDecipheriv('aes-256-gcm', key, iv);
           d.setAAD(Buffer.from('header'));
           d.setAuthTag(e.getAuthTag());
           const back = d.update(ct, undefined, 'utf8') + d.final('utf8');
           const bad = crypto.createDecipheriv('aes-256-gcm', key, iv);
           const t = Buffer.from(e.getAuthTag()); t[0] ^= 1;
           bad.setAuthTag(t);
           bad.update(ct);
           let refused = null;
           try { bad.final(); } catch (err) { refused = err.message; }
           const k = crypto.randomBytes(32), v = crypto.randomBytes(16);
           const c2 = crypto.createCipheriv('aes-256-cbc', k, v);
           const padded = c2.update('hello', 'utf8', 'base64') + c2.final('base64');
           const d2 = crypto.createDecipheriv('aes-256-cbc', k, v);
           const cbcBack = d2.update(padded, 'base64', 'utf8') + d2.final('utf8');
           return { cbcHex, gcm: sealed.toString('hex'), tag: tag.toString('hex'), back, refused, cbcBack };
         };",
    ));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        value,
        serde_json::json!({
            "cbcHex": "7649abac8119b246cee98e9b12e9197d",
            "gcm": "0388dace60b6a392f328c2b971b2fe78",
            "tag": "ab6e47d42cec13bdf53a67b21257bddf",
            "back": "4242424242424242",
            "refused": "Unsupported state or unable to authenticate data",
            "cbcBack": "hello"
        })
    );
}

/// Node's ECDSA signatures (P-256, SHA-256): what code signs verifies outside the engine
/// with the public key, what it verifies is checked, and a changed message fails.
#[test]
fn node_signatures_verify_outside_the_engine() {
    use base64::Engine as _;
    use p256::ecdsa::signature::Verifier;
    use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
    let key = p256::ecdsa::SigningKey::from_slice(&[7u8; 32]).unwrap_or_else(|e| panic!("{e}"));
    let private = key
        .to_pkcs8_pem(LineEnding::LF)
        .unwrap_or_else(|e| panic!("{e}"));
    let public = key
        .verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .unwrap_or_else(|e| panic!("{e}"));
    let code = format!(
        "const crypto = require('crypto');
         const PRIVATE = {private:?};
         const PUBLIC = {public:?};
         module.exports = () => {{
           const signer = crypto.createSign('SHA256');
           signer.update('amount=10&');
           signer.update('currency=eur');
           const signature = signer.sign(PRIVATE, 'base64');
           const ok = crypto.createVerify('SHA256').update('amount=10&currency=eur').verify(PUBLIC, signature, 'base64');
           const changed = crypto.verify('sha256', Buffer.from('amount=99&currency=eur'), PUBLIC, Buffer.from(signature, 'base64'));
           const oneShot = crypto.sign('sha256', Buffer.from('x'), {{ key: PRIVATE }}).length > 0;
           let rsa = null;
           try {{ crypto.createSign('RSA-SHA512').update('x').sign(PRIVATE); }} catch (e) {{ rsa = e.name; }}
           return {{ signature, ok, changed, oneShot, rsa }};
         }};",
        private = private.as_str(),
    );
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(&code));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(value["ok"], true, "{value}");
    assert_eq!(value["changed"], false);
    assert_eq!(value["oneShot"], true);
    assert_eq!(value["rsa"], "TypeError");
    let der = base64::engine::general_purpose::STANDARD
        .decode(value["signature"].as_str().unwrap_or_default())
        .unwrap_or_default();
    let signature = p256::ecdsa::Signature::from_der(&der).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        key.verifying_key()
            .verify(b"amount=10&currency=eur", &signature)
            .is_ok()
    );
}

/// Node's RSA: PKCS#1 v1.5 and PSS signatures and OAEP encryption made in the engine check out
/// with the same key outside it; what is made outside (a signature, a PKCS#1 v1.5 ciphertext)
/// checks out inside; `createPublicKey` of the private key answers its public half.
#[test]
fn node_rsa_signatures_and_encryption_match_outside_the_engine() {
    use base64::Engine as _;
    use rsa::pkcs1::{EncodeRsaPrivateKey, LineEnding};
    use rsa::pkcs8::{DecodePrivateKey, EncodePublicKey};
    use rsa::sha2::Sha256;
    let b64 = base64::engine::general_purpose::STANDARD;
    let private = include_str!("testdata/rsa-2048.pem");
    let key = rsa::PrivateKey::from_pkcs8_pem(private).unwrap_or_else(|e| panic!("{e}"));
    let pkcs1 = key
        .to_pkcs1_pem(LineEnding::LF)
        .unwrap_or_else(|e| panic!("{e}"));
    let public = key
        .to_public_key()
        .to_public_key_pem(LineEnding::LF)
        .unwrap_or_else(|e| panic!("{e}"));
    let outside = b64.encode(
        key.pkcs1v15_sign::<Sha256>(b"from outside")
            .unwrap_or_else(|e| panic!("{e}")),
    );
    let sealed = b64.encode(
        key.to_public_key()
            .pkcs1v15_encrypt(b"4242424242424242")
            .unwrap_or_else(|e| panic!("{e}")),
    );
    let code = format!(
        "const crypto = require('crypto');
         const PRIVATE = {private:?};
         const PKCS1 = {pkcs1:?};
         module.exports = () => {{
           const signature = crypto.createSign('RSA-SHA256').update('amount=10').sign(PKCS1, 'base64');
           const pss = crypto.sign('sha256', Buffer.from('amount=10'), {{
             key: PRIVATE, padding: crypto.constants.RSA_PKCS1_PSS_PADDING }}).toString('base64');
           const pub = crypto.createPublicKey(PRIVATE);
           const ok = crypto.verify('sha256', Buffer.from('from outside'), pub, Buffer.from({outside:?}, 'base64'));
           const wrong = crypto.createVerify('sha256').update('from outsidE').verify(pub, {outside:?}, 'base64');
           const oaep = crypto.publicEncrypt({{ key: pub, oaepHash: 'sha256' }}, Buffer.from('hello')).toString('base64');
           const opened = crypto.privateDecrypt({{ key: crypto.createPrivateKey(PRIVATE),
             padding: crypto.constants.RSA_PKCS1_PADDING }}, Buffer.from({sealed:?}, 'base64')).toString();
           const roundTrip = crypto.privateDecrypt(PRIVATE, crypto.publicEncrypt(pub, Buffer.from('x'))).toString();
           return {{ signature, pss, ok, wrong, oaep, opened, roundTrip,
             publicPem: pub.export({{ type: 'spki', format: 'pem' }}), kind: pub.asymmetricKeyType, type: pub.type }};
         }};",
        pkcs1 = pkcs1.as_str(),
    );
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(&code));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    let bytes = |name: &str| {
        b64.decode(value[name].as_str().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let public_key = key.to_public_key();
    assert!(
        public_key
            .pkcs1v15_verify::<Sha256>(b"amount=10", &bytes("signature"))
            .is_ok()
    );
    assert!(
        public_key
            .pss_verify::<Sha256>(b"amount=10", &bytes("pss"))
            .is_ok()
    );
    assert_eq!(
        key.oaep_decrypt::<Sha256>(&bytes("oaep"))
            .unwrap_or_else(|e| panic!("{e}")),
        b"hello"
    );
    assert_eq!(value["ok"], true, "{value}");
    assert_eq!(value["wrong"], false);
    assert_eq!(value["opened"], "4242424242424242");
    assert_eq!(value["roundTrip"], "x");
    assert_eq!(value["publicPem"], public.as_str());
    assert_eq!(value["kind"], "rsa");
    assert_eq!(value["type"], "public");
}

/// ECDH on P-256, HKDF, PBKDF2 and AES-CTR, as the wallet decryptors use them: the shared
/// secret matches p256's outside the engine, the KDFs give their published answers (RFC 5869
/// case 1; PBKDF2-HMAC-SHA256 of "password"/"salt"), CTR round-trips.
#[test]
fn ecdh_hkdf_pbkdf2_and_ctr_give_known_answers() {
    use p256::elliptic_curve::sec1::ToSec1Point;
    let a = p256::SecretKey::from_slice(&[3u8; 32]).unwrap_or_else(|e| panic!("{e}"));
    let b = p256::SecretKey::from_slice(&[5u8; 32]).unwrap_or_else(|e| panic!("{e}"));
    let shared = p256::ecdh::diffie_hellman(a.to_nonzero_scalar(), b.public_key().as_affine());
    let hex = |bytes: &[u8]| {
        bytes.iter().fold(String::new(), |mut out, x| {
            use std::fmt::Write;
            let _ = write!(out, "{x:02x}");
            out
        })
    };
    let expected = hex(shared.raw_secret_bytes());
    let b_public = hex(b.public_key().to_sec1_point(false).as_bytes());
    let code = format!(
        "const crypto = require('crypto');
         module.exports = () => {{
           const a = crypto.createECDH('prime256v1');
           a.setPrivateKey(Buffer.alloc(32, 3));
           const secret = a.computeSecret({b_public:?}, 'hex', 'hex');
           const x = crypto.createECDH('prime256v1'); const y = crypto.createECDH('prime256v1');
           const xp = x.generateKeys(); const yp = y.generateKeys(null, 'compressed');
           const agree = x.computeSecret(yp).equals(y.computeSecret(xp));
           const okm = Buffer.from(crypto.hkdfSync('sha256', Buffer.alloc(22, 0x0b),
             Buffer.from('000102030405060708090a0b0c', 'hex'), Buffer.from('f0f1f2f3f4f5f6f7f8f9', 'hex'), 42)).toString('hex');
           const pbkdf2 = crypto.pbkdf2Sync('password', 'salt', 1, 32, 'sha256').toString('hex');
           const key = Buffer.alloc(32, 7); const iv = Buffer.alloc(16, 1);
           const enc = crypto.createCipheriv('aes-256-ctr', key, iv);
           const sealed = Buffer.concat([enc.update('counter mode'), enc.final()]);
           const dec = crypto.createDecipheriv('aes-256-ctr', key, iv);
           const back = Buffer.concat([dec.update(sealed), dec.final()]).toString();
           return {{ secret, agree, okm, pbkdf2, back, size: sealed.length, compressed: yp.length }};
         }};"
    );
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(&code));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        value,
        serde_json::json!({
            "secret": expected, "agree": true,
            "okm": "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865",
            "pbkdf2": "120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b",
            "back": "counter mode", "size": 12, "compressed": 33
        })
    );
}

/// What the wallet decryptors and jose needed next: counter modes give output from `update`
/// (GCM's ciphertext equals what `final` alone gave), ECDSA signs in IEEE P1363 form when asked
/// (64 bytes that verify), `ECDH.setPublicKey` and `util.isBuffer` exist.
#[test]
fn counter_modes_stream_and_p1363_signatures() {
    use p256::pkcs8::{EncodePrivateKey, LineEnding};
    let key = p256::ecdsa::SigningKey::from_slice(&[9u8; 32]).unwrap_or_else(|e| panic!("{e}"));
    let private = key
        .to_pkcs8_pem(LineEnding::LF)
        .unwrap_or_else(|e| panic!("{e}"));
    let code = format!(
        "const crypto = require('crypto');
         const PRIVATE = {private:?};
         module.exports = () => {{
           const key = Buffer.alloc(16, 1); const iv = Buffer.alloc(12, 2);
           const whole = crypto.createCipheriv('aes-128-gcm', key, iv);
           const once = Buffer.concat([whole.update(Buffer.alloc(0)), whole.final()]).toString('hex');
           const parts = crypto.createCipheriv('aes-128-gcm', key, iv);
           const first = parts.update('hello ');
           const second = parts.update('world');
           const rest = parts.final();
           const streamed = Buffer.concat([first, second, rest]);
           const wholeAgain = crypto.createCipheriv('aes-128-gcm', key, iv);
           const direct = Buffer.concat([wholeAgain.update('hello world'), wholeAgain.final()]);
           const sig = crypto.sign('sha256', Buffer.from('x'), {{ key: PRIVATE, dsaEncoding: 'ieee-p1363' }});
           const ok = crypto.verify('sha256', Buffer.from('x'), PRIVATE, sig);
           const ecdh = crypto.createECDH('prime256v1'); ecdh.generateKeys();
           return {{ once, firstLen: first.length, secondLen: second.length, restLen: rest.length,
             same: streamed.equals(direct), tags: parts.getAuthTag().equals(wholeAgain.getAuthTag()),
             p1363: sig.length, ok, setPublic: typeof ecdh.setPublicKey(ecdh.getPublicKey()),
             isBuffer: require('util').isBuffer(Buffer.alloc(1)) }};
         }};",
        private = private.as_str(),
    );
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(&code));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(value["firstLen"], 6, "{value}");
    assert_eq!(value["secondLen"], 5);
    assert_eq!(value["restLen"], 0);
    assert_eq!(value["same"], true);
    assert_eq!(value["tags"], true);
    assert_eq!(value["once"], "");
    assert_eq!(value["p1363"], 64);
    assert_eq!(value["ok"], true);
    assert_eq!(value["setPublic"], "object");
    assert_eq!(value["isBuffer"], true);
}
