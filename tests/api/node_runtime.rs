//! Code written for Basis Theory's Node.js 16 runtime runs unchanged (docs/decisions.md §7):
//! CommonJS with `require`, Node's built-in modules computing real values, `req.bt`, any return
//! value. Over HTTP on each database.

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use tokenvault_tests::{on_each_backend, rule, unique};

use super::reactors::{p, react, reactor};
use super::tokens::{Client, full, with};

/// A reactor that signs a detokenized card number with a secret of its configuration, as real
/// payment code does, and answers with the signature as a plain string (a non-object is `raw`).
#[tokio::test]
async fn a_reactor_signs_a_detokenized_value_with_node_crypto() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let card = owner
            .create(&json!({"type": "token", "data": "4242424242424242"}))
            .await;
        let user = with(app, &["token:use"], json!([])).await;
        let code = r"'use strict';
const crypto = require('node:crypto');
const { Buffer } = require('buffer');
module.exports = function (req) {
  const secret = Buffer.from(req.configuration.SECRET, 'base64');
  return crypto.createHmac('sha256', secret).update(req.args.card, 'utf8').digest('hex');
};";
        let f = super::reactors::formula(
            app,
            code,
            json!([p("card", "string", false)]),
            json!([{"name": "SECRET", "type": "string"}]),
        )
        .await;
        let secret = b"a secret of the reactor";
        let res = app
            .post(
                "/reactors",
                &json!({"name": unique("r"), "formula": {"id": f["id"]},
                        "configuration": {"SECRET": base64_of(secret)}}),
            )
            .await;
        assert_eq!(res.status(), 201);
        let r: Value = res.json().await.unwrap();
        let res = react(
            &user,
            &r["id"],
            json!({"card": format!("{{{{ {} }}}}", card["id"].as_str().unwrap())}),
        )
        .await;
        assert_eq!(res.status(), 200);
        let body: Value = res.json().await.unwrap();
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret).unwrap();
        mac.update(b"4242424242424242");
        let expected = mac
            .finalize()
            .into_bytes()
            .iter()
            .fold(String::new(), |mut out, b| {
                use std::fmt::Write;
                let _ = write!(out, "{b:02x}");
                out
            });
        assert_eq!(body["raw"], json!(expected), "{body}");
    })
    .await;
}

/// `req.bt` is the client `req.svc` is; the reactor SDK's errors keep their statuses; a module
/// that is not there is a 500 naming it.
#[tokio::test]
async fn req_bt_the_sdk_errors_and_a_missing_module() {
    on_each_backend(async |app| {
        let user = with(app, &["token:use"], json!([])).await;
        let acting = app
            .create_app(&json!({"name": unique("bt"), "type": "private",
                "rules": [rule(1, "/general/", "reveal", &["token:create", "token:read"])]}))
            .await;
        let code = r"const { BadRequestError } = require('@basis-theory/basis-theory-reactor-formulas-sdk-js');
module.exports = async (req) => {
  if (req.args.fail) throw new BadRequestError({ why: 'asked to' });
  const made = await req.bt.tokens.create({ type: 'token', data: Buffer.from('aGk=', 'base64').toString(),
                                            fingerprintExpression: '{{ data }}' });
  const read = await req.svc.tokens.retrieve(made.id);
  let refused = null;
  try { await req.bt.tokens.create({ type: 'nope', data: 1 }); }
  catch (e) { refused = [e.status, Object.keys(e.details || {}), e.data.status, typeof e.title]; }
  const shown = await req.bt.detokenize({ greeting: `{{ ${made.id} }}` });
  return [read.data, req.bt === req.svc, read.fingerprint_expression, refused, shown];
};";
        let r = reactor(app, code, json!([p("fail", "boolean", true)]), json!({"application": {"id": acting["id"]}})).await;
        let res = react(&user, &r["id"], json!({})).await;
        assert_eq!(res.status(), 200);
        assert_eq!(
            res.json::<Value>().await.unwrap()["raw"],
            json!(["hi", true, "{{ data }}", [400, ["type"], 400, "string"], {"greeting": "hi"}]),
            "camelCase fields are taken; errors carry data and details"
        );
        let res = react(&user, &r["id"], json!({"fail": true})).await;
        assert_eq!(res.status(), 400);
        let problem: Value = res.json().await.unwrap();
        assert_eq!(problem["errors"], json!({"why": "asked to"}), "{problem}");

        let missing = reactor(app, "const x = require('left-pad'); module.exports = () => x;", json!([]), json!({})).await;
        let res = react(&user, &missing["id"], json!({})).await;
        assert_eq!(res.status(), 500);
        let problem: Value = res.json().await.unwrap();
        assert!(
            problem["detail"].as_str().unwrap_or_default().contains("Cannot find module 'left-pad'"),
            "{problem}"
        );
    })
    .await;
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `fetch` from a reactor reaches an allowed destination through the vault's outbound client
/// (the request as sent, the answer read back), at most ten times a call; a destination the
/// policy refuses rejects the promise and is never contacted.
#[tokio::test]
async fn fetch_goes_through_the_outbound_client_and_its_policy() {
    use tokenvault_tests::destination::{Answer, Destination};
    tokenvault_tests::on_each_backend_with(super::proxies::loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        dest.answer(Answer {
            status: 202,
            headers: vec![("content-type".into(), "application/json".into()), ("x-answer".into(), "yes".into())],
            body: br#"{"charged":true}"#.to_vec(),
            ..Answer::default()
        });
        let user = with(app, &["token:use"], json!([])).await;
        let code = r"module.exports = async (req) => {
  const res = await fetch(req.args.url + '/charges?x=1', {
    method: 'POST', headers: { 'Content-Type': 'application/json', 'Authorization': 'Bearer sk' },
    body: JSON.stringify({ amount: 10 }),
  });
  const answer = await res.json();
  let refused = null;
  try { await fetch('http://10.0.0.1/'); } catch (e) { refused = e.message; }
  let eleventh = null;
  for (let i = 0; i < 9; i++) {
    try { await fetch(req.args.url + '/again'); } catch (e) { eleventh = `${i}: ${e.message}`; }
  }
  return { raw: { status: res.status, header: res.headers.get('x-answer'), answer, refused, eleventh } };
};";
        let r = reactor(app, code, json!([p("url", "string", false)]), json!({})).await;
        let res = react(&user, &r["id"], json!({"url": dest.url})).await;
        assert_eq!(res.status(), 200);
        let raw = res.json::<Value>().await.unwrap()["raw"].clone();
        assert_eq!(raw["status"], 202, "{raw}");
        assert_eq!(raw["header"], "yes");
        assert_eq!(raw["answer"], json!({"charged": true}));
        assert!(
            raw["refused"].as_str().unwrap_or_default().contains("not allowed"),
            "{raw}"
        );
        // One charge, one refused (never sent, but counted), eight more sent, the ninth of the
        // loop refused: ten a call.
        assert!(
            raw["eleventh"].as_str().unwrap_or_default().starts_with("8: ")
                && raw["eleventh"].as_str().unwrap_or_default().contains("at most 10"),
            "{raw}"
        );
        let received = dest.received();
        assert_eq!(received.len(), 9, "the charge and eight more");
        let charge = &received[0];
        assert_eq!(charge.method, "POST");
        assert_eq!(charge.target, "/charges?x=1");
        assert_eq!(charge.header("authorization"), Some("Bearer sk"));
        assert_eq!(charge.json(), json!({"amount": 10}));
    })
    .await;
}

/// Basis Theory's client packages, provided by the vault: built from `req.applicationOptions`
/// they act as the reactor's application (the token they make is that application's, and
/// answers and errors take each SDK's shape); the key is the call's own, so a later call that
/// is handed it is refused, and the HTTP API never takes it.
#[tokio::test]
async fn the_sdk_clients_act_with_a_key_of_one_call() {
    on_each_backend(async |app| {
        let user = with(app, &["token:use"], json!([])).await;
        let acting = app
            .create_app(&json!({"name": unique("sdk"), "type": "private",
                "rules": [rule(1, "/general/", "reveal", &["token:create", "token:read"])]}))
            .await;
        let code = r"const { BasisTheoryClient } = require('@basis-theory/node-sdk');
const { BasisTheory } = require('@basis-theory/basis-theory-js');
module.exports = async (req) => {
  const client = new BasisTheoryClient(req.applicationOptions);
  const made = await client.tokens.create({ type: 'token', data: req.args.value, deduplicateToken: false });
  const got = await client.tokens.get(made.id);
  const bt = await new BasisTheory().init(req.applicationOptions.apiKey, { apiBaseUrl: req.applicationOptions.baseUrl });
  const legacy = await bt.tokens.retrieve(made.id);
  let missing = null;
  try { await client.tokens.get('00000000-0000-4000-8000-000000000000'); } catch (e) { missing = [e.name, e.statusCode]; }
  let stale = null;
  if (req.args.old) {
    try { await new BasisTheoryClient({ apiKey: req.args.old }).tokens.get(made.id); } catch (e) { stale = [e.name, e.statusCode]; }
    try { await (await new BasisTheory().init(req.args.old)).tokens.retrieve(made.id); } catch (e) { stale.push(e.name, e.status); }
  }
  return { raw: { id: made.id, data: got.data, createdBy: got.createdBy, legacy: legacy.data,
    key: req.applicationOptions.apiKey, missing, stale } };
};";
        let r = reactor(
            app,
            code,
            json!([p("value", "string", false), p("old", "string", true)]),
            json!({"application": {"id": acting["id"]}}),
        )
        .await;
        let res = react(&user, &r["id"], json!({"value": "4242"})).await;
        assert_eq!(res.status(), 200);
        let first = res.json::<Value>().await.unwrap()["raw"].clone();
        assert_eq!(first["data"], "4242", "{first}");
        assert_eq!(first["legacy"], "4242");
        assert_eq!(first["createdBy"], acting["id"], "made as the reactor's application");
        assert_eq!(first["missing"], json!(["NotFoundError", 404]));
        let key = first["key"].as_str().unwrap_or_default().to_string();
        assert!(key.len() > 32, "{first}");
        assert_ne!(Some(key.as_str()), acting["key"].as_str(), "never the application's own key");

        let res = react(&user, &r["id"], json!({"value": "5555", "old": key})).await;
        assert_eq!(res.status(), 200);
        let second = res.json::<Value>().await.unwrap()["raw"].clone();
        assert_eq!(
            second["stale"],
            json!(["UnauthorizedError", 401, "BasisTheoryApiError", 401]),
            "a past call's key"
        );
        assert_ne!(second["key"], first["key"]);
        let over_http = Client { app, key: key.clone() };
        assert_eq!(over_http.get(&format!("/tokens/{}", first["id"].as_str().unwrap())).await.status(), 401);

        let bare = reactor(app, "module.exports = (req) => ({ raw: [req.applicationOptions, req.bt] });", json!([]), json!({})).await;
        let res = react(&user, &bare["id"], json!({})).await;
        assert_eq!(res.json::<Value>().await.unwrap()["raw"], json!([null, null]), "no application, no client");
    })
    .await;
}
