//! The eleven invocation rules: arguments, casts, detokenization and its bounds, code errors,
//! and the tokenize block.

use serde_json::{Value, json};
use tokenvault_tests::{assert_invalid, assert_problem, on_each_backend, rule, unique};

use super::{ECHO, p, react, reactor};
use crate::tokens::{full, with};

#[tokio::test]
async fn the_invocation_rules() {
    on_each_backend(async |app| {
        let user = with(app, &["token:use"], json!([])).await;
        let types = "module.exports = async (req) => { const t = {}; \
            for (const k of Object.keys(req.args)) t[k] = typeof req.args[k]; \
            return { raw: { args: req.args, types: t, svc: req.svc } }; };";
        let r = reactor(
            app,
            types,
            json!([p("name", "string", false), p("n", "number", true), p("flag", "boolean", true),
                   p("card.number", "string", true)]),
            json!({}),
        )
        .await;
        // Rule 1: token:use.
        let reader = with(app, &["token:read"], json!([])).await;
        assert_problem(react(&reader, &r["id"], json!({"name": "x"})).await, 403).await;
        // Rules 2-4, 6: declared names only (case-sensitive), nesting, casting.
        let res = react(&user, &r["id"], json!({"name": 5, "n": "42", "flag": "true", "Name": "x",
                                                 "extra": 1, "card": {"number": "1", "cvc": "2"}})).await;
        assert_eq!(res.status(), 200);
        let raw = res.json::<Value>().await.unwrap()["raw"].clone();
        assert_eq!(raw["args"], json!({"name": "5", "n": 42, "flag": true, "card": {"number": "1"}}));
        assert_eq!(raw["types"]["n"], "number");
        assert_eq!(raw["svc"], Value::Null, "no application: svc is null");
        // Rules 5 and 6: a missing required parameter, an impossible cast.
        assert_invalid(react(&user, &r["id"], json!({"n": 1})).await, &["args.name"]).await;
        assert_invalid(react(&user, &r["id"], json!({"name": "a", "n": "many"})).await, &["args.n"]).await;

        // Rules 7-9: expressions, complex tokens whole, validation after detokenization.
        let owner = full(app).await;
        let card = owner
            .create(&json!({"type": "card", "data": {"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2030}}))
            .await;
        let name = owner.create(&json!({"type": "token", "data": "Ada"})).await;
        let r2 = reactor(app, ECHO, json!([p("card.number", "string", false), p("greeting", "string", false)]), json!({})).await;
        let args = json!({"card": format!("{{{{ {} }}}}", card["id"].as_str().unwrap()),
                          "greeting": format!("Hello {{{{ {} }}}}!", name["id"].as_str().unwrap())});
        let res = react(&user, &r2["id"], args.clone()).await;
        assert_eq!(res.status(), 200);
        let raw = res.json::<Value>().await.unwrap()["raw"].clone();
        assert_eq!(raw["args"], json!({"card": {"number": "4242424242424242"}, "greeting": "Hello Ada!"}));
        // token:use on the container of each detokenized token.
        let narrow = with(app, &[], json!([rule(1, "/general/", "reveal", &["token:use"])])).await;
        assert_problem(react(&narrow, &r2["id"], args).await, 403).await;
        // Rule 10: at most 100 tokens.
        let many: Vec<String> = (0..101).map(|i| format!("{{{{ tok-{i} }}}}")).collect();
        assert_invalid(react(&user, &r2["id"], json!({"card": {"number": many.join(" ")}, "greeting": "x"})).await, &["args"]).await;
        assert_invalid(react(&user, &r2["id"], json!({"card": "{{ no-such-token }}", "greeting": "x"})).await, &["args"]).await;
        // Each occurrence of a token is a copy: the detokenized arguments are bounded.
        let big = owner.create(&json!({"type": "token", "data": "z".repeat(200_000)})).await;
        let copies = format!("{{{{ {} }}}}", big["id"].as_str().unwrap()).repeat(60);
        assert_invalid(react(&user, &r2["id"], json!({"card": {"number": copies}, "greeting": "x"})).await, &["args"]).await;
    })
    .await;
}

#[tokio::test]
async fn code_errors_and_the_tokenize_block() {
    on_each_backend(async |app| {
        let user = with(app, &["token:use"], json!([])).await;
        // Rule 11: failures in the common error format.
        let bad = reactor(app, "module.exports = async () => { throw new BadRequestError({ field: ['nope'] }); };", json!([]), json!({})).await;
        let body = assert_problem(react(&user, &bad["id"], json!({})).await, 400).await;
        assert_eq!(body["errors"], json!({"field": ["nope"]}));
        let boom = reactor(app, "module.exports = () => { throw new Error('their words'); };", json!([]), json!({})).await;
        let body = assert_problem(react(&user, &boom["id"], json!({})).await, 500).await;
        assert_eq!(body["detail"], "their words");
        let custom = reactor(app, "module.exports = () => { throw new CustomHttpResponseError({ status: 418, headers: { 'x-tea': 'yes' }, body: { pot: true } }); };", json!([]), json!({})).await;
        let res = react(&user, &custom["id"], json!({})).await;
        assert_eq!(res.status(), 418);
        assert_eq!(res.headers()["x-tea"], "yes");
        assert_eq!(res.json::<Value>().await.unwrap(), json!({"pot": true}));
        // A status that carries no body (or a 1xx) would split the HTTP stream: a 500 instead.
        for status in [100, 204, 304] {
            let code = format!("module.exports = () => {{ throw new CustomHttpResponseError({{ status: {status}, body: 'smuggled' }}); }};");
            let r = reactor(app, &code, json!([]), json!({})).await;
            let res = react(&user, &r["id"], json!({})).await;
            assert_eq!(res.status(), 500, "status {status}");
        }
        // Framing, cookies and the vault's own headers are not the code's to set.
        let headers = reactor(app, "module.exports = () => { throw new CustomHttpResponseError({ status: 200, headers: { 'content-length': '1', 'set-cookie': 'a=b', 'svc-trace-id': 'forged', 'x-ok': 'yes' }, body: 'hello' }); };", json!([]), json!({})).await;
        let res = react(&user, &headers["id"], json!({})).await;
        assert_eq!(res.status(), 200);
        assert!(res.headers().get("set-cookie").is_none());
        assert_ne!(res.headers()["svc-trace-id"], "forged");
        assert_eq!(res.headers()["x-ok"], "yes");
        assert_eq!(res.headers()["x-content-type-options"], "nosniff");
        assert_eq!(res.text().await.unwrap(), "hello");

        // The tokenize block is tokenized as the reactor's application.
        let code = "module.exports = async (req) => ({ raw: { ok: true }, tokenize: { secret: { type: 'token', data: req.args.v } } });";
        let no_app = reactor(app, code, json!([p("v", "string", false)]), json!({})).await;
        assert_invalid(react(&user, &no_app["id"], json!({"v": "x"})).await, &["tokenize"]).await;
        let creator = app
            .create_app(&json!({"name": unique("c"), "type": "private", "permissions": ["token:create"]}))
            .await;
        let with_app = reactor(app, code, json!([p("v", "string", false)]), json!({"application": {"id": creator["id"]}})).await;
        assert_eq!(with_app["application"]["id"], creator["id"]);
        assert!(with_app["application"].get("key").is_none(), "never a key");
        let res = react(&user, &with_app["id"], json!({"v": "made by the reactor"})).await;
        assert_eq!(res.status(), 200);
        let out: Value = res.json().await.unwrap();
        assert_eq!(out["raw"], json!({"ok": true}));
        let id = out["tokens"]["secret"]["id"].as_str().unwrap();
        assert_eq!(out["tokens"]["secret"]["created_by"], creator["id"]);
        let owner = full(app).await;
        assert_eq!(owner.read(id).await["data"], "made by the reactor");
    })
    .await;
}
