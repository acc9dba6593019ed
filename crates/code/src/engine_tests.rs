//! The engine's tests: limits, the lazy globals, and Node's built-in modules computing real
//! values.

use super::*;

fn engine() -> Engine {
    let limits = Limits {
        timeout: Duration::from_secs(2),
        memory: 16 << 20,
        max_output: 1 << 20,
    };
    Engine::new(
        limits,
        Rc::new(NoHost),
        Rc::new(ModuleStore::new(Vec::new())),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

struct NoHost;

impl Host for NoHost {
    fn svc(&self, _: String, _: Vec<Json>, _: Option<String>) -> Json {
        serde_json::json!({"error": {"status": 500}})
    }
    fn fetch(&self, request: Json) -> Json {
        // Echoes the request back as the answer's body, as JSON.
        use base64::Engine as _;
        let body = base64::engine::general_purpose::STANDARD.encode(request.to_string());
        serde_json::json!({"ok": {"status": 201, "headers": [["x-echo", "1"]], "body": body}})
    }
    fn log(&self, _: &str, _: &str) {}
}

const EMPTY: Json = Json::Null;

fn call(code: &str) -> Call<'_> {
    Call {
        code,
        request: &EMPTY,
        svc: false,
    }
}

/// Mapping an error can itself throw (a `BigInt` in `errors`, a throwing `message` getter);
/// the exception it leaves is per runtime and would keep the spent context alive into the
/// next call. The call clears it and the runtime is not reused.
#[test]
fn an_exception_left_by_error_mapping_costs_the_runtime() {
    for code in [
        "module.exports = () => { throw new BadRequestError({ amount: 10n }); };",
        "module.exports = () => { const e = new Error('x'); \
         Object.defineProperty(e, 'message', { get() { throw { leak: globalThis }; } }); throw e; };",
    ] {
        let mut engine = engine();
        let (outcome, discard) = engine.run(&call(code));
        assert!(outcome.is_err(), "{code}");
        assert!(discard, "{code}");
    }
    // Words are not a limit: a thrown "out of memory" is the code's own error.
    let mut forged = engine();
    let (outcome, _) = forged.run(&call(
        "module.exports = () => { throw new Error('out of memory'); };",
    ));
    assert!(
        matches!(&outcome, Err(CodeError::Thrown { status: 500, message, .. }) if message == "out of memory"),
        "{outcome:?}"
    );
    // A plain throw keeps it.
    let mut engine = engine();
    let (outcome, discard) = engine.run(&call(
        "module.exports = () => { throw new BadRequestError('no'); };",
    ));
    assert!(matches!(
        outcome,
        Err(CodeError::Thrown { status: 400, .. })
    ));
    assert!(!discard);
    assert!(!engine.finish());
}

/// The globals are made on first use (prelude.js): every listed name is there when read,
/// whatever the spelling of the read, can be replaced, and behaves as if made up front.
#[test]
fn globals_made_on_first_use_behave_as_made_up_front() {
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(
        "module.exports = async () => {
           // The host's timer callback is not a global: replacing the name changes nothing.
           globalThis.__fireTimer = 5;
           const seen = [typeof console.log, typeof setTimeout, typeof clearTimeout,
             typeof crypto.randomUUID, typeof TextEncoder, typeof globalThis.TextDecoder,
             'BadRequestError' in globalThis, typeof globalThis['CustomHttpResponseError'],
             typeof NoSuchGlobal];
           const bytes = new TextEncoder().encode('zürich');
           const back = new TextDecoder().decode(bytes);
           const fired = await new Promise((resolve) => setTimeout(resolve, 1, 'fired'));
           const cleared = setTimeout(() => { throw new Error('cleared timer ran'); }, 1);
           clearTimeout(cleared);
           RateLimitError = 'replaced';
           let missing;
           try { missing = NoSuchGlobal; } catch (e) { missing = e.name; }
           return { seen, length: bytes.length, back, fired, replaced: RateLimitError, missing,
                    uuid: crypto.randomUUID().length };
         };",
    ));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        value,
        serde_json::json!({
            "seen": ["function", "function", "function", "function", "function", "function",
                     true, "function", "undefined"],
            "length": 7, "back": "zürich", "fired": "fired", "replaced": "replaced",
            "missing": "ReferenceError", "uuid": 36
        })
    );
    assert!(!engine.finish());
    // A class made on first use still maps to its status.
    let (outcome, _) = engine.run(&call(
        "module.exports = () => { throw new AuthorizationError({ why: 'no' }); };",
    ));
    assert!(
        matches!(&outcome, Err(CodeError::Thrown { status: 403, errors: Some(e), .. }) if e["why"] == "no"),
        "{outcome:?}"
    );
}

/// Node's built-in modules compute real results (values computed outside the engine: RFC
/// 4231-style HMAC and FIPS 180 digests, base64 both ways).
#[test]
fn node_modules_compute_real_values() {
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(
        r"const crypto = require('crypto');
           const { Buffer: B } = require('node:buffer');
           const EventEmitter = require('events');
           const qs = require('querystring');
           const util = require('util');
           const { StringDecoder } = require('string_decoder');
           const sdk = require('@basis-theory/basis-theory-reactor-formulas-sdk-js');
           const topThis = this === module.exports;
           module.exports = async function (req) {
             const emitter = new EventEmitter();
             let heard = null;
             emitter.on('x', (v) => { heard = v; });
             emitter.emit('x', 42);
             const decoder = new StringDecoder('utf8');
             const euro = Buffer.from('€');
             const split = decoder.write(euro.slice(0, 1)) + decoder.write(euro.slice(1));
             let ticks = 0;
             await new Promise((resolve) => {
               const id = setInterval(() => { ticks += 1; if (ticks === 3) { clearInterval(id); resolve(); } }, 1);
             });
             await new Promise((resolve) => setImmediate(resolve));
             const notFound = [];
             for (const name of ['cluster', 'worker_threads', 'base64-js', 'node:vm']) {
               try { require(name); notFound.push('found ' + name); } catch (e) { notFound.push(e.message); }
             }
             const copy = structuredClone({ when: new Date(0), seen: new Map([[1, 'a']]) });
             return {
               hmac: crypto.createHmac('sha256', 'key').update('message').digest('hex'),
               sha256: crypto.createHash('sha256').update('a').update(B.from('bc')).digest('hex'),
               md5: crypto.createHash('md5').update('').digest('base64'),
               random: crypto.randomBytes(16).length,
               randomDiffers: crypto.randomBytes(8).toString('hex') !== crypto.randomBytes(8).toString('hex'),
               safe: [crypto.timingSafeEqual(B.from('ab'), B.from('ab')), crypto.timingSafeEqual(B.from('ab'), B.from('ac'))],
               base64: Buffer.from('hello').toString('base64'),
               back: Buffer.from('aGVsbG8=', 'base64').toString(),
               hex: Buffer.from([1, 255]).toString('hex'),
               heard, split, ticks,
               qs: qs.stringify({ a: 'x y', b: ['1', '2'] }),
               parsed: qs.parse('a=x%20y&b=1&b=2'),
               format: util.format('%s=%d %j', 'a', 5, { b: 1 }),
               env: process.env, version: process.version,
               global: global === globalThis,
               uuid: crypto.randomUUID().length,
               notFound,
               clone: [copy.when instanceof Date, copy.seen.get(1)],
               sdk: sdk.BadRequestError === BadRequestError && new sdk.InvalidReactorFormulaError('x').status,
               topThis,
             };
           };",
    ));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        value,
        serde_json::json!({
            "hmac": "6e9ef29b75fffc5b7abae527d58fdadb2fe42e7219011976917343065f58ed4a",
            "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            "md5": "1B2M2Y8AsgTpgAmY7PhCfg==",
            "random": 16, "randomDiffers": true, "safe": [true, false],
            "base64": "aGVsbG8=", "back": "hello", "hex": "01ff",
            "heard": 42, "split": "€", "ticks": 3,
            "qs": "a=x%20y&b=1&b=2",
            "parsed": {"a": "x y", "b": ["1", "2"]},
            "format": "a=5 {\"b\":1}",
            "env": {}, "version": "v16.20.2", "global": true, "uuid": 36,
            "notFound": ["Cannot find module 'cluster'", "Cannot find module 'worker_threads'",
                         "Cannot find module 'base64-js'", "Cannot find module 'node:vm'"],
            "clone": [true, "a"], "sdk": 422, "topThis": true
        })
    );
    assert!(!engine.finish());
}

/// A module that is not there fails the call with a 500 naming it, at load or in the
/// handler.
#[test]
fn a_missing_module_is_a_500_naming_it() {
    for code in [
        "const cluster = require('cluster'); module.exports = () => 1;",
        "module.exports = () => require('left-pad')('x', 3);",
    ] {
        let mut engine = engine();
        let (outcome, _) = engine.run(&call(code));
        assert!(
            matches!(&outcome, Err(CodeError::Thrown { status: 500, message, .. })
                if message.starts_with("Cannot find module '")),
            "{code}: {outcome:?}"
        );
    }
}

/// `URL` and `url` read URLs as Node.js does (the host's WHATWG parser).
#[test]
fn urls_are_built_and_read_back() {
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(
        "const url = require('url');
         module.exports = () => {
           const u = new URL('/v1/charges?amount=10#top', 'https://api.example.com:8443');
           u.searchParams.append('currency', 'eur');
           u.pathname = '/v2/charges';
           let invalid = null;
           try { new URL('not a url'); } catch (e) { invalid = e.name; }
           const legacy = url.parse('https://user:pw@host.example/a/b?x=1&y=2#h', true);
           const params = new URLSearchParams({ a: '1 2', b: 'é' });
           return {
             href: u.href, host: u.host, hostname: u.hostname, port: u.port,
             origin: u.origin, search: u.search, hash: u.hash, protocol: u.protocol,
             amount: u.searchParams.get('amount'), invalid, json: JSON.stringify({ u }),
             legacy: [legacy.hostname, legacy.pathname, legacy.query.y, legacy.auth, legacy.path],
             params: params.toString(),
             formatted: url.format({ protocol: 'https', hostname: 'x.example', pathname: '/p', query: { q: 'a b' } }),
             resolved: url.resolve('https://x.example/a/b', '../c'),
             same: URL === url.URL,
           };
         };",
    ));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        value,
        serde_json::json!({
            "href": "https://api.example.com:8443/v2/charges?amount=10&currency=eur#top",
            "host": "api.example.com:8443", "hostname": "api.example.com", "port": "8443",
            "origin": "https://api.example.com:8443", "search": "?amount=10&currency=eur",
            "hash": "#top", "protocol": "https:", "amount": "10", "invalid": "TypeError",
            "json": "{\"u\":\"https://api.example.com:8443/v2/charges?amount=10&currency=eur#top\"}",
            "legacy": ["host.example", "/a/b", "2", "user:pw", "/a/b?x=1&y=2"],
            "params": "a=1+2&b=%C3%A9",
            "formatted": "https://x.example/p?q=a%20b",
            "resolved": "https://x.example/c",
            "same": true
        })
    );
}

/// `fetch` goes to the host as JSON (the body in base64) and its answer comes back as a
/// `Response`; `Headers` and `Request` are there.
#[test]
fn fetch_goes_through_the_host() {
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(
        "module.exports = async () => {
           const res = await fetch('https://api.example/v1/charges', {
             method: 'post', headers: { 'Content-Type': 'application/json', 'X-Key': 'k' },
             body: JSON.stringify({ amount: 1 }),
           });
           const sent = await res.json();
           const body = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(sent.body), (c) => c.charCodeAt(0))));
           return { status: res.status, ok: res.ok, echo: res.headers.get('X-Echo'),
                    method: sent.method, url: sent.url, headers: sent.headers, body,
                    request: new Request('https://x.example/a').method, h: new Headers({ A: '1' }).get('a') };
         };",
    ));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        value,
        serde_json::json!({
            "status": 201, "ok": true, "echo": "1", "method": "POST",
            "url": "https://api.example/v1/charges",
            "headers": [["content-type", "application/json"], ["x-key", "k"]],
            "body": {"amount": 1}, "request": "GET", "h": "1"
        })
    );
}

/// Node's `https.request` goes through the same host call as `fetch`: the request as
/// written (method, headers, body), the answer as events.
#[test]
fn https_request_goes_through_the_host() {
    use base64::Engine as _;
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(
        "const https = require('https');
         module.exports = () => new Promise((resolve, reject) => {
           const req = https.request({ hostname: 'api.example', path: '/v1/x?y=1', method: 'PUT',
                                       headers: { 'Content-Type': 'application/json' } }, (res) => {
             let text = '';
             res.setEncoding('utf8');
             res.on('data', (c) => { text += c; });
             res.on('end', () => resolve({ status: res.statusCode, echo: res.headers['x-echo'], sent: JSON.parse(text) }));
           });
           req.on('error', reject);
           req.write('{\"a\":');
           req.end('1}');
         });",
    ));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(value["status"], 201, "{value}");
    assert_eq!(value["echo"], "1");
    assert_eq!(value["sent"]["method"], "PUT");
    assert_eq!(value["sent"]["url"], "https://api.example/v1/x?y=1");
    let body = base64::engine::general_purpose::STANDARD
        .decode(value["sent"]["body"].as_str().unwrap_or_default())
        .unwrap_or_default();
    assert_eq!(body, br#"{"a":1}"#);
}

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

fn engine_with_modules(files: &[(&str, &str)]) -> Engine {
    let limits = Limits {
        timeout: Duration::from_secs(2),
        memory: 16 << 20,
        max_output: 1 << 20,
    };
    let sources = files
        .iter()
        .map(|(path, text)| ((*path).to_string(), (*text).to_string()))
        .collect();
    let compiled = crate::modules::CodeModules::compile(sources).unwrap_or_else(|e| panic!("{e}"));
    let store = crate::modules::ModuleStore::new(compiled.files().to_vec());
    Engine::new(limits, Rc::new(NoHost), Rc::new(store)).unwrap_or_else(|e| panic!("{e}"))
}

/// The operator's packages load as Node.js loads them: `main`, `index.js`, `exports` with the
/// `require` condition and subpaths, nested `node_modules`, scoped names, JSON files, cycles,
/// sloppy mode with `this` as `module.exports`; a file that does not compile and a name that is
/// nowhere fail the `require` with messages naming them.
#[test]
fn operator_modules_resolve_as_node_resolves_them() {
    let mut engine = engine_with_modules(&[
        (
            "/node_modules/greet/package.json",
            r#"{"name":"greet","main":"lib/main"}"#,
        ),
        (
            "/node_modules/greet/lib/main.js",
            "undeclared = 010; var self = this;
             module.exports = { hello: (n) => require('./words').hi + ' ' + n,
               isThis: self === module.exports, octal: undeclared, json: require('../data.json').v,
               dep: require('dep').x, buffer: typeof require('buffer').Buffer, file: __filename };",
        ),
        ("/node_modules/greet/lib/words.js", "exports.hi = 'hello';"),
        ("/node_modules/greet/data.json", r#"{"v": 7}"#),
        (
            "/node_modules/greet/node_modules/dep/index.js",
            "exports.x = 'nested';",
        ),
        (
            "/node_modules/cond/package.json",
            r#"{"exports": {".": {"import": "./esm.mjs", "require": "./cjs.js"}, "./feature": "./f.js"}}"#,
        ),
        ("/node_modules/cond/cjs.js", "module.exports = 'cjs';"),
        ("/node_modules/cond/f.js", "module.exports = 'feature';"),
        (
            "/node_modules/@scope/pkg/index.js",
            "module.exports = require('cond/feature');",
        ),
        ("/node_modules/broken/index.js", "module.exports = (;"),
        (
            "/node_modules/cyc/a.js",
            "exports.early = 1; exports.fromB = require('./b').sawEarly;",
        ),
        (
            "/node_modules/cyc/b.js",
            "exports.sawEarly = require('./a').early;",
        ),
    ]);
    let code = "module.exports = () => {
        const g = require('greet');
        const fail = (name) => { try { require(name); return null; } catch (e) { return `${e.name}: ${e.message}`; } };
        let notExported;
        try { require('cond/secret'); } catch (e) { notExported = e.code; }
        return { hello: g.hello('ann'), isThis: g.isThis, octal: g.octal, json: g.json, dep: g.dep,
          buffer: g.buffer, file: g.file, cond: require('cond'), scoped: require('@scope/pkg'),
          cycle: require('cyc/a').fromB, same: require('greet') === g, notExported,
          missing: fail('nope'), nestedHidden: fail('dep'), broken: fail('broken'),
          resolved: require.resolve('greet') };
      };";
    let (outcome, _) = engine.run(&call(code));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        value,
        serde_json::json!({
            "hello": "hello ann", "isThis": true, "octal": 8, "json": 7, "dep": "nested",
            "buffer": "function", "file": "/node_modules/greet/lib/main.js", "cond": "cjs",
            "scoped": "feature", "cycle": 1, "same": true,
            "notExported": "ERR_PACKAGE_PATH_NOT_EXPORTED",
            "missing": "Error: Cannot find module 'nope'",
            "nestedHidden": "Error: Cannot find module 'dep'",
            "broken": "SyntaxError: unexpected token in expression: ';' (/node_modules/broken/index.js, line 1)",
            "resolved": "/node_modules/greet/lib/main.js"
        })
    );
}

/// The built-ins npm packages stand on: streams (readable-stream under the legacy `Stream`),
/// `path`, `punycode`, `assert`, and the ones that load but refuse (`fs`, `zlib`); the
/// globals packages test for (`Error.captureStackTrace`, `[object process]`, URL error codes).
#[test]
fn stream_path_punycode_assert_and_what_packages_test_for() {
    let code = "const { Readable, Transform, PassThrough, Writable, pipeline } = require('stream');
      const Stream = require('node:stream');
      const path = require('path');
      const assert = require('assert');
      module.exports = async () => {
        const upper = new Transform({ transform(chunk, _, done) { done(null, chunk.toString().toUpperCase()); } });
        const out = [];
        const sink = new Writable({ write(chunk, _, done) { out.push(chunk.toString()); done(); } });
        await new Promise((resolve, reject) => pipeline(Readable.from(['ab', 'cd']), upper, sink,
          (e) => (e ? reject(e) : resolve())));
        const through = new PassThrough();
        const read = new Promise((resolve) => { let s = ''; through.on('data', (c) => { s += c; }); through.on('end', () => resolve(s)); });
        through.end('passed');
        let assertion; try { assert.strictEqual(1, 2); } catch (e) { assertion = [e.name, e.code]; }
        let fsError; try { require('fs').readFileSync('/etc/passwd'); } catch (e) { fsError = e.code; }
        let zlibError; try { require('zlib').gunzipSync(Buffer.from('x')); } catch (e) { zlibError = e.code; }
        let urlError; try { new URL(''); } catch (e) { urlError = e.code; }
        const captured = {}; Error.captureStackTrace(captured);
        return {
          piped: out.join(''), through: await read,
          legacy: new PassThrough() instanceof Stream && typeof Stream.prototype.pipe === 'function',
          joined: path.join('/a/b', '../c', 'd.json'), ext: path.extname('x.tar.gz'),
          ascii: require('punycode').toASCII('bücher.example'),
          assertion, fsError, zlibError, urlError, stack: typeof captured.stack,
          tag: Object.prototype.toString.call(process), os: require('os').EOL,
        };
      };";
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(code));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        value,
        serde_json::json!({
            "piped": "ABCD", "through": "passed", "legacy": true, "joined": "/a/c/d.json",
            "ext": ".gz", "ascii": "xn--bcher-kva.example",
            "assertion": ["AssertionError", "ERR_ASSERTION"], "fsError": "EACCES",
            "zlibError": "ERR_METHOD_NOT_IMPLEMENTED", "urlError": "ERR_INVALID_URL",
            "stack": "string", "tag": "[object process]", "os": "\n"
        })
    );
}

/// A call that runs out of memory and catches the engine's error, or makes QuickJS unable to
/// allocate the error at all, still costs its runtime; the second is answered as the memory
/// limit, not as a bare thrown value.
#[test]
fn running_out_of_memory_costs_the_runtime_even_when_caught() {
    let mut first = engine();
    let (outcome, discard) = first.run(&call(
        "module.exports = () => { const a = []; try { for (;;) a.push(new Array(1000).fill(1)); } catch (e) { return a.length > 0; } };",
    ));
    assert_eq!(outcome.ok(), Some(Json::Bool(true)));
    assert!(
        discard,
        "a caught out-of-memory error still discards the runtime"
    );
    let mut second = engine();
    let (outcome, discard) = second.run(&call(
        "module.exports = () => { for (let i = 0; i < 1e7; i++) setTimeout(() => {}, 1e9); };",
    ));
    assert!(discard);
    assert!(
        matches!(&outcome, Err(CodeError::Limit(m)) if m.contains("MiB")),
        "{outcome:?}"
    );
}

/// A thrown message is bounded as it will travel: JSON-escaped.
#[test]
fn a_thrown_message_is_bounded_once_escaped() {
    let mut engine = engine();
    let (outcome, discard) = engine.run(&call(
        "module.exports = () => { throw new Error('\\u0001'.repeat(900000)); };",
    ));
    assert!(
        matches!(&outcome, Err(CodeError::Limit(m)) if m.contains("1 MiB")),
        "{outcome:?}"
    );
    assert!(discard, "a limit costs the runtime");
}

/// What the Basis Theory-whitelisted packages needed beyond the first built-ins: standard
/// streams that go nowhere, `net`/`tls`/`dns`/`child_process` that load and refuse, crypto's
/// stream side and secret keys, `TextDecoder`'s other encodings, `socket` before `end()`.
#[test]
fn what_whitelisted_packages_need_loads_and_refuses_plainly() {
    let code = "const crypto = require('crypto');
      const net = require('net');
      module.exports = async () => {
        const refused = (f) => { try { f(); return null; } catch (e) { return e.code; } };
        const hash = crypto.createHash('sha256'); hash.write('ab'); hash.end('c');
        const signer = crypto.createSign('RSA-SHA256'); signer.write('x'); signer.end();
        const secret = crypto.createSecretKey(Buffer.from('k'));
        const hmac = crypto.createHmac('sha256', secret).update('abc').digest('hex');
        const req = require('http').request('http://127.0.0.1:9/x', { method: 'POST' });
        const socket = await new Promise((resolve) => req.on('socket', (s) => resolve(typeof s.setKeepAlive)));
        return {
          stderr: [process.stderr.isTTY, process.stderr.write('x'), process.stdout.fd],
          ip: [net.isIP('10.0.0.1'), net.isIP('::1'), net.isIP('example.com')],
          refused: [refused(() => net.connect(80)), refused(() => require('tls').connect(443)),
            refused(() => require('child_process').spawn('ls')), refused(() => require('http2').connect('https://x')),
            refused(() => require('dgram').createSocket('udp4'))],
          domain: require('domain').create().run(() => 7), constants: require('constants').O_RDONLY,
          dns: await require('dns').promises.lookup('example.com').catch((e) => e.code),
          digest: hash.read().toString('hex'), signed: typeof signer.sign, hmac,
          curves: crypto.getCurves(), secretSize: secret.symmetricKeySize,
          latin1: new TextDecoder('latin1').decode(new Uint8Array([0x63, 0x61, 0x66, 0xe9])),
          utf16: new TextDecoder('utf-16le').decode(new Uint8Array([0x68, 0, 0x69, 0])),
          socket,
        };
      };";
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(code));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        value,
        serde_json::json!({
            "stderr": [false, true, 1], "ip": [4, 6, 0],
            "refused": ["EACCES", "EACCES", "EACCES", "EACCES", "EACCES"], "dns": "EACCES",
            "domain": 7, "constants": 0,
            "digest": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            "signed": "function",
            "hmac": "342e519ce0ad6c03a36b98eeb3f1d130db4813b9df4d1160eda488d712dc78ee",
            "curves": ["prime256v1"], "secretSize": 1,
            "latin1": "café", "utf16": "hi", "socket": "function"
        })
    );
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
