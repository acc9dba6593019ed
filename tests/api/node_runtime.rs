//! Code written for Basis Theory's Node.js 16 runtime runs unchanged (docs/decisions.md §7):
//! CommonJS with `require`, Node's built-in modules computing real values, `req.bt`, any return
//! value. Over HTTP on each database.

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use tokenvault_tests::{on_each_backend, rule, unique};

use super::reactors::{p, react, reactor};
use super::tokens::{full, with};

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
  const made = await req.bt.tokens.create({ type: 'token', data: Buffer.from('aGk=', 'base64').toString() });
  const read = await req.svc.tokens.retrieve(made.id);
  return [read.data, req.bt === req.svc];
};";
        let r = reactor(app, code, json!([p("fail", "boolean", true)]), json!({"application": {"id": acting["id"]}})).await;
        let res = react(&user, &r["id"], json!({})).await;
        assert_eq!(res.status(), 200);
        assert_eq!(res.json::<Value>().await.unwrap()["raw"], json!(["hi", true]));
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
