//! Node's built-in modules and the operator's packages computing real values: hashes, ciphers,
//! signatures and key agreement checked against published answers or RustCrypto outside the
//! engine, URLs, fetch and http over the host, streams, and Node's module resolution.

use crate::worker::testing::*;

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
