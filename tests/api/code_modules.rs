//! The operator's npm packages (`TOKENVAULT_CODE_MODULES`, docs/decisions.md §7): read and
//! compiled at start, required by code with Node's resolution. Over HTTP on each database.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tokenvault_tests::on_each_backend_with;

use super::reactors::{p, react, reactor};
use super::tokens::with;

/// Writes `files` (paths under the folder) into a fresh folder and answers it.
fn folder(files: &[(&str, &str)]) -> PathBuf {
    let root = std::env::temp_dir().join(format!(
        "tokenvault-modules-{}",
        uuid::Uuid::new_v4().simple()
    ));
    for (path, text) in files {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap_or(Path::new("/"))).unwrap();
        std::fs::write(file, text).unwrap();
    }
    root
}

/// A package of the folder is required by a reactor, by its name and a subpath; its JSON file
/// and its own dependency come along; a name that is in no folder fails the call with a 500
/// naming it, and so does a file of the folder that does not compile, and one over 8 MiB (which
/// does not stop the server from starting).
#[tokio::test]
async fn a_reactor_requires_the_operators_packages() {
    let bundle = format!("// {}\nmodule.exports = 1;", "x".repeat(9 << 20));
    let modules = folder(&[
        ("node_modules/bundled/dist/huge.js", &bundle),
        (
            "node_modules/card-brand/package.json",
            r#"{"name": "card-brand", "version": "1.0.0", "main": "src/brand.js"}"#,
        ),
        (
            "node_modules/card-brand/src/brand.js",
            "const prefixes = require('../prefixes.json');
             const luhn = require('luhn-check');
             module.exports = (number) => ({
               brand: Object.keys(prefixes).find((b) => prefixes[b].some((p) => number.startsWith(p))) || 'unknown',
               valid: luhn(number) });",
        ),
        (
            "node_modules/card-brand/prefixes.json",
            r#"{"visa": ["4"], "mastercard": ["51", "52", "53", "54", "55"]}"#,
        ),
        (
            "node_modules/card-brand/node_modules/luhn-check/index.js",
            "module.exports = function (s) { var sum = 0, alt = false;
               for (var i = s.length - 1; i >= 0; i--) { var d = +s[i];
                 if (alt) { d *= 2; if (d > 9) d -= 9; } sum += d; alt = !alt; }
               return sum % 10 === 0; };",
        ),
        ("node_modules/broken/index.js", "module.exports = {;"),
    ]);
    let dir = modules.clone();
    on_each_backend_with(
        move |config| config.code.modules = Some(dir.clone()),
        async |app| {
            let user = with(app, &["token:use"], json!([])).await;
            let code = "const brand = require('card-brand');
module.exports = (req) => ({ raw: brand(req.args.number) });";
            let r = reactor(app, code, json!([p("number", "string", false)]), json!({})).await;
            let res = react(&user, &r["id"], json!({"number": "4242424242424242"})).await;
            assert_eq!(res.status(), 200);
            let body: Value = res.json().await.unwrap();
            assert_eq!(
                body["raw"],
                json!({"brand": "visa", "valid": true}),
                "{body}"
            );
            let res = react(&user, &r["id"], json!({"number": "5500000000000005"})).await;
            let body: Value = res.json().await.unwrap();
            assert_eq!(body["raw"], json!({"brand": "mastercard", "valid": false}));

            for (name, says) in [
                ("luhn-check", "Cannot find module 'luhn-check'"),
                ("broken", "/node_modules/broken/index.js"),
                ("bundled/dist/huge.js", "larger than 8 MiB"),
            ] {
                let code = format!("module.exports = () => require('{name}');");
                let r = reactor(app, &code, json!([]), json!({})).await;
                let res = react(&user, &r["id"], json!({})).await;
                assert_eq!(res.status(), 500, "{name}");
                let body: Value = res.json().await.unwrap();
                assert!(body.to_string().contains(says), "{name}: {body}");
            }
        },
    )
    .await;
    let _ = std::fs::remove_dir_all(modules);
}

/// Real npm packages, installed by `npm ci` from `tests/npm/` as an operator would: node-fetch
/// and axios reach a loopback destination through the vault's outbound client (request and
/// answer checked on both ends), xmlbuilder2 and node-forge compute values checked here.
#[tokio::test]
async fn node_fetch_axios_xmlbuilder2_and_node_forge_from_the_module_folder() {
    use tokenvault_tests::destination::{Answer, Destination};
    let modules = tokenvault_tests::npm::installed();
    on_each_backend_with(
        move |config| {
            super::proxies::loopback(config);
            config.code.modules = Some(modules.clone());
        },
        async |app| {
            let dest = Destination::start("127.0.0.1").await;
            dest.answer(Answer {
                status: 201,
                headers: vec![("content-type".into(), "application/json".into())],
                body: br#"{"id":"ch_1","paid":true}"#.to_vec(),
                ..Answer::default()
            });
            let user = with(app, &["token:use"], json!([])).await;
            let code = r"const fetch = require('node-fetch');
const axios = require('axios');
const { create } = require('xmlbuilder2');
const forge = require('node-forge');
module.exports = async (req) => {
  const res = await fetch(`${req.args.url}/charges`, {
    method: 'POST', body: JSON.stringify({ amount: 10 }),
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer sk_1' },
  });
  const fetched = { status: res.status, body: await res.json() };
  const posted = await axios.post(`${req.args.url}/refunds`, { charge: 'ch_1' }, { headers: { 'X-Key': 'k' } });
  const got = await axios.get(`${req.args.url}/charges/ch_1?expand=card`);
  const xml = create({ root: { a: 1 } }).end({ prettyPrint: true });
  const md = forge.md.sha256.create();
  md.update('abc');
  return { raw: { fetched, axios: { status: posted.status, data: posted.data, get: got.status },
    xml, sha256: md.digest().toHex(), base64: forge.util.encode64('hello') } };
};";
            let r = reactor(app, code, json!([p("url", "string", false)]), json!({})).await;
            let res = react(&user, &r["id"], json!({"url": dest.url})).await;
            let status = res.status();
            let body: Value = res.json().await.unwrap();
            assert_eq!(status, 200, "{body}");
            let raw = &body["raw"];
            assert_eq!(
                raw["fetched"],
                json!({"status": 201, "body": {"id": "ch_1", "paid": true}})
            );
            assert_eq!(
                raw["axios"],
                json!({"status": 201, "data": {"id": "ch_1", "paid": true}, "get": 201})
            );
            assert_eq!(raw["xml"], "<?xml version=\"1.0\"?>\n<root>\n  <a>1</a>\n</root>");
            assert_eq!(
                raw["sha256"],
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
            );
            assert_eq!(raw["base64"], "aGVsbG8=");
            let received = dest.received();
            assert_eq!(received.len(), 3, "{received:?}");
            assert_eq!(received[0].method, "POST");
            assert_eq!(received[0].target, "/charges");
            assert_eq!(received[0].header("authorization"), Some("Bearer sk_1"));
            assert_eq!(received[0].header("accept-encoding"), Some("identity"));
            assert_eq!(received[0].json(), json!({"amount": 10}));
            assert_eq!(received[1].method, "POST");
            assert_eq!(received[1].target, "/refunds");
            assert_eq!(received[1].header("x-key"), Some("k"));
            assert_eq!(received[1].json(), json!({"charge": "ch_1"}));
            assert_eq!(received[2].method, "GET");
            assert_eq!(received[2].target, "/charges/ch_1?expand=card");
        },
    )
    .await;
}
