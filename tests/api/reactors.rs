//! Reactor formulas, reactors and the eleven invocation rules, over HTTP on each database.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::{TestApp, assert_invalid, assert_problem, on_each_backend, rule, unique};

use super::tokens::{Client, full, with};

const ECHO: &str = "module.exports = async function (req) { return { raw: { args: req.args } }; };";

pub(crate) async fn formula(app: &TestApp, code: &str, params: Value, config: Value) -> Value {
    let res = app
        .post(
            "/reactor-formulas",
            &json!({"name": unique("f"), "type": "private", "code": code,
                    "configuration": config, "request_parameters": params}),
        )
        .await;
    assert_eq!(res.status(), 201, "create formula");
    res.json().await.unwrap()
}

pub(crate) async fn reactor(app: &TestApp, code: &str, params: Value, extra: Value) -> Value {
    let f = formula(app, code, params, json!([])).await;
    let mut body = json!({"name": unique("r"), "configuration": {}, "formula": {"id": f["id"]}});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let res = app.post("/reactors", &body).await;
    assert_eq!(res.status(), 201, "create reactor");
    res.json().await.unwrap()
}

pub(crate) fn p(name: &str, ty: &str, optional: bool) -> Value {
    json!({"name": name, "type": ty, "optional": optional})
}

pub(crate) async fn react(c: &Client<'_>, id: &Value, args: Value) -> reqwest::Response {
    c.post(
        &format!("/reactors/{}/react", id.as_str().unwrap()),
        &json!({ "args": args }),
    )
    .await
}

#[tokio::test]
async fn formulas_and_reactors_are_managed_per_tenant() {
    on_each_backend(async |app| {
        // Code is stored as given; code that does not compile is a 422 naming `code` and the
        // line at its invocation.
        let bad_code = "// a reactor\nmodule.exports = async () => { return {raw: ; }; };";
        let res = app
            .post(
                "/reactor-formulas",
                &json!({"name": "bad", "code": bad_code}),
            )
            .await;
        assert_eq!(res.status(), 201);
        let bad: Value = res.json().await.unwrap();
        assert_eq!(bad["code"], bad_code);
        let res = app
            .post("/reactors", &json!({"name": "bad", "configuration": {}, "formula": {"id": bad["id"]}}))
            .await;
        assert_eq!(res.status(), 201);
        let bad_reactor: Value = res.json().await.unwrap();
        let user = with(app, &["token:use"], json!([])).await;
        let res = react(&user, &bad_reactor["id"], json!({})).await;
        let body = assert_problem(res, 422).await;
        let said = body["errors"]["code"][0].as_str().unwrap_or_default().to_string();
        assert!(said.contains("SyntaxError") && said.contains("line 2"), "{body}");
        let res = app
            .post(
                "/reactor-formulas",
                &json!({"code": "x", "request_parameters": [{"name": "a", "type": "date"}]}),
            )
            .await;
        assert_invalid(res, &["name", "request_parameters.0.type"]).await;
        let f = formula(
            app,
            ECHO,
            json!([p("x", "string", false)]),
            json!([{"name": "limit", "type": "number"}]),
        )
        .await;
        let fid = f["id"].as_str().unwrap();
        assert_eq!(f["request_parameters"][0]["name"], "x");
        let res = app
            .put(
                &format!("/reactor-formulas/{fid}"),
                &json!({"name": "f2", "code": "module.exports = ("}),
            )
            .await;
        assert_eq!(res.status(), 200, "stored as given");
        let res = app
            .put(
                &format!("/reactor-formulas/{fid}"),
                &json!({"name": "f2", "code": ECHO, "request_parameters": [p("x", "string", false)],
                        "configuration": [{"name": "limit", "type": "number"}]}),
            )
            .await;
        assert_eq!(res.status(), 200);
        // Configuration must give every declared name, castable to its type.
        for (config, field) in [
            (json!({}), "configuration.limit"),
            (json!({"limit": "many"}), "configuration.limit"),
        ] {
            let res = app
                .post(
                    "/reactors",
                    &json!({"name": "r", "configuration": config, "formula": {"id": fid}}),
                )
                .await;
            assert_invalid(res, &[field]).await;
        }
        let mgmt = app.app("management", &["reactor:read"]).await;
        let res = app
            .post(
                "/reactors",
                &json!({"name": "r", "configuration": {"limit": "5"}, "formula": {"id": fid},
                                      "application": {"id": mgmt["id"]}}),
            )
            .await;
        assert_invalid(res, &["application.id"]).await;
        let res = app
            .post(
                "/reactors",
                &json!({"name": "r", "configuration": {"limit": "5"},
                                      "formula": {"id": uuid::Uuid::new_v4()}}),
            )
            .await;
        assert_invalid(res, &["formula.id"]).await;
        let res = app
            .post(
                "/reactors",
                &json!({"name": "reactor-abcdef", "configuration": {"limit": "5"}, "formula": {"id": fid}}),
            )
            .await;
        assert_eq!(res.status(), 201);
        let r: Value = res.json().await.unwrap();
        assert_eq!(
            r["configuration"],
            json!({"limit": 5}),
            "cast to the declared type"
        );
        assert_eq!(r["formula"]["code"], ECHO);
        let rid = r["id"].as_str().unwrap();
        // A formula in use cannot be deleted.
        let in_use = assert_problem(app.delete(&format!("/reactor-formulas/{fid}")).await, 409).await;
        assert!(in_use["detail"].as_str().unwrap().starts_with("A reactor uses the formula"), "{in_use}");
        // Lists filter by id and by name (contains, any case).
        let listed: Value = app
            .get(&format!(
                "/reactors?name={}",
                &r["name"].as_str().unwrap()[..6].to_uppercase()
            ))
            .await
            .json()
            .await
            .unwrap();
        assert!(
            listed["data"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["id"] == r["id"])
        );
        let listed: Value = app
            .get(&format!("/reactor-formulas?id={fid}"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(listed["pagination"]["total_items"], 1);
        // Update keeps the formula.
        let res = app
            .put(
                &format!("/reactors/{rid}"),
                &json!({"name": "renamed", "configuration": {"limit": 1}}),
            )
            .await;
        assert_eq!(res.status(), 200);
        assert_eq!(res.json::<Value>().await.unwrap()["formula"]["id"], f["id"]);
        // Another tenant sees neither.
        let (_, other) = app.new_tenant("other").await;
        for path in [
            format!("/reactors/{rid}"),
            format!("/reactor-formulas/{fid}"),
        ] {
            let res = app
                .request_as(Some(&other), Method::GET, &path)
                .send()
                .await
                .unwrap();
            assert_problem(res, 404).await;
        }
        assert_eq!(app.delete(&format!("/reactors/{rid}")).await.status(), 204);
        assert_eq!(
            app.delete(&format!("/reactor-formulas/{fid}"))
                .await
                .status(),
            204
        );
        assert_problem(app.get(&format!("/reactors/{rid}")).await, 404).await;
    })
    .await;
}

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

#[tokio::test]
async fn svc_acts_as_the_reactors_application() {
    on_each_backend(async |app| {
        let user = with(app, &["token:use"], json!([])).await;
        let owner = full(app).await;
        let hidden = owner.create(&json!({"type": "token", "data": "not for the reactor", "containers": ["/hidden/"]})).await;
        let acting = app
            .create_app(&json!({"name": unique("svc"), "type": "private",
                "rules": [rule(1, "/general/", "reveal", &["token:create", "token:read", "token:update", "token:delete"])]}))
            .await;
        let code = r"module.exports = async (req) => {
            const made = await req.svc.tokens.create({ type: 'token', data: 'via svc' });
            const read = await req.svc.tokens.retrieve(made.id);
            const patched = await req.svc.tokens.update(made.id, { metadata: { k: 'v' } });
            const listed = await req.svc.tokens.list({ id: [made.id] });
            const shaped = await req.svc.tokenize({ a: 'x' });
            let refused = null;
            try { await req.svc.tokens.retrieve(req.args.hidden); } catch (e) { refused = e.status; }
            let tooBig = null;
            try { await req.svc.tokens.create({ type: 'token', data: 'x'.repeat(2 * 1024 * 1024) }); }
            catch (e) { tooBig = e.status; }
            await req.svc.tokens.delete(made.id);
            let gone = null;
            try { await req.svc.tokens.retrieve(made.id); } catch (e) { gone = e.status; }
            return { raw: { data: read.data, meta: patched.metadata, total: listed.pagination.total_items,
                            tokenized: typeof shaped.a, refused, gone, tooBig } };
        };";
        let r = reactor(app, code, json!([p("hidden", "string", false)]), json!({"application": {"id": acting["id"]}})).await;
        let res = react(&user, &r["id"], json!({"hidden": hidden["id"]})).await;
        assert_eq!(res.status(), 200);
        let raw = res.json::<Value>().await.unwrap()["raw"].clone();
        assert_eq!(
            raw,
            json!({"data": "via svc", "meta": {"k": "v"}, "total": 1, "tokenized": "string",
                   "refused": 403, "gone": 404, "tooBig": 413}),
            "svc has the application's rights, not the caller's"
        );
    })
    .await;
}

/// An expired application no longer acts for its reactor (its `tokenize` block), even before
/// the sweep deletes it — as a proxy's application.
#[tokio::test]
async fn an_expired_application_no_longer_acts_for_its_reactor() {
    let no_sweep = |config: &mut tokenvault_server::Config| config.expiry_sweep_secs = 3600;
    tokenvault_tests::on_each_backend_with(no_sweep, async |app| {
        let user = with(app, &["token:use"], json!([])).await;
        let expires = time::OffsetDateTime::now_utc() + time::Duration::seconds(2);
        let expires = expires
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap();
        let acting = app
            .create_app(&json!({"name": unique("acting"), "type": "private",
                "permissions": ["token:create"], "expires_at": expires}))
            .await;
        let code =
            "module.exports = async () => ({ tokenize: { a: { type: 'token', data: 'x' } } });";
        let r = reactor(
            app,
            code,
            json!([]),
            json!({"application": {"id": acting["id"]}}),
        )
        .await;
        let res = react(&user, &r["id"], json!({})).await;
        assert_eq!(res.status(), 200, "acts while it is valid");
        tokio::time::sleep(std::time::Duration::from_millis(2_200)).await;
        let res = react(&user, &r["id"], json!({})).await;
        assert_invalid(res, &["tokenize"]).await;
    })
    .await;
}

/// The reactor is read in the same round trip as the caller's key: only a reactor of the key's
/// own tenant, with or without an idempotency key (whose middleware authenticates first), and
/// a deleted one is gone at once.
#[tokio::test]
async fn a_reactor_is_invoked_only_with_keys_of_its_tenant() {
    on_each_backend(async |app| {
        let r = reactor(app, ECHO, json!([p("name", "string", false)]), json!({})).await;
        let path = format!("/reactors/{}/react", r["id"].as_str().unwrap());
        let user = with(app, &["token:use"], json!([])).await;
        let res = react(&user, &r["id"], json!({"name": "a"})).await;
        assert_eq!(res.status(), 200);

        // A private key of another tenant with `token:use`: no such reactor.
        let (_, other_management) = app.new_tenant(&unique("other")).await;
        let res = app
            .request_as(Some(&other_management), Method::POST, "/applications")
            .json(&json!({"name": "x", "type": "private", "permissions": ["token:use"]}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
        let other: Value = res.json().await.unwrap();
        let res = app
            .request_as(other["key"].as_str(), Method::POST, &path)
            .json(&json!({"args": {"name": "a"}}))
            .send()
            .await
            .unwrap();
        assert_problem(res, 404).await;

        // With an idempotency key.
        let res = app
            .request_as(Some(&user.key), Method::POST, &path)
            .header("SVC-IDEMPOTENCY-KEY", unique("react"))
            .json(&json!({"args": {"name": "b"}}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["raw"]["args"], json!({"name": "b"}));

        // A bad key is refused whatever the path names; a deleted reactor is gone at once.
        let res = app
            .request_as(
                Some("key_00000000000000000000000000000000"),
                Method::POST,
                &path,
            )
            .json(&json!({"args": {"name": "a"}}))
            .send()
            .await
            .unwrap();
        assert_problem(res, 401).await;
        let res = app
            .delete(&format!("/reactors/{}", r["id"].as_str().unwrap()))
            .await;
        assert_eq!(res.status(), 204);
        assert_problem(react(&user, &r["id"], json!({"name": "a"})).await, 404).await;
    })
    .await;
}

/// A call naming one token has it read with the caller's key (decisions §9): the same answers
/// as any detokenization — its own tenant's token only, `token:use` on its container — and the
/// body is answered for only once the caller is known.
#[tokio::test]
async fn a_calls_one_token_is_read_with_its_key_and_decided_as_any() {
    on_each_backend(async |app| {
        let r = reactor(app, ECHO, json!([p("card", "string", false)]), json!({})).await;
        let path = format!("/reactors/{}/react", r["id"].as_str().unwrap());
        let owner = full(app).await;
        let mine = owner
            .create(&json!({"type": "token", "data": "4242"}))
            .await;
        let mine = format!("{{{{ {} }}}}", mine["id"].as_str().unwrap());
        let user = with(
            app,
            &[],
            json!([rule(1, "/general/", "reveal", &["token:use"])]),
        )
        .await;
        let res = react(&user, &r["id"], json!({"card": mine})).await;
        assert_eq!(res.status(), 200);
        assert_eq!(
            res.json::<Value>().await.unwrap()["raw"]["args"],
            json!({"card": "4242"})
        );
        // token:use on another container only: refused.
        let narrow = with(
            app,
            &[],
            json!([rule(1, "/pci/", "reveal", &["token:use"])]),
        )
        .await;
        assert_problem(react(&narrow, &r["id"], json!({"card": mine})).await, 403).await;

        // Another tenant's token by its id: no such token here, never its data.
        let (_, other_management) = app.new_tenant(&unique("other")).await;
        let writer = app
            .create_app_as(
                &other_management,
                &json!({"name": "w", "type": "private", "permissions": ["token:create"]}),
            )
            .await;
        let res = app
            .request_as(writer["key"].as_str(), Method::POST, "/tokens")
            .json(&json!({"type": "token", "data": "theirs"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
        let theirs: Value = res.json().await.unwrap();
        let theirs = format!("{{{{ {} }}}}", theirs["id"].as_str().unwrap());
        let body = assert_invalid(
            react(&user, &r["id"], json!({"card": theirs})).await,
            &["args"],
        )
        .await;
        assert!(body.to_string().contains("does not exist"), "{body}");

        // The body is read before the key is looked up, but answered for after it.
        for key in [None, Some("key_00000000000000000000000000000000")] {
            let res = app
                .request_as(key, Method::POST, &path)
                .header("Content-Type", "application/json")
                .body("{not json")
                .send()
                .await
                .unwrap();
            assert_problem(res, 401).await;
        }
        let res = app
            .request_as(Some(&user.key), Method::POST, &path)
            .header("Content-Type", "application/json")
            .body("{not json")
            .send()
            .await
            .unwrap();
        assert_invalid(res, &["body"]).await;
        // No body, or one without args: no arguments (here a missing required one).
        let res = app
            .request_as(Some(&user.key), Method::POST, &path)
            .send()
            .await
            .unwrap();
        assert_invalid(res, &["args.card"]).await;
    })
    .await;
}

/// Sends `head` and the first `sent` bytes of `body` to `path` on a raw connection, then the rest
/// `rest_after` later (never, for `None`); returns the answer's status line.
async fn react_slowly(
    app: &TestApp,
    path: &str,
    key: &str,
    body: &str,
    sent: usize,
    rest_after: Option<std::time::Duration>,
) -> String {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let addr = app.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\nsvc-api-key: {key}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&body.as_bytes()[..sent]).await.unwrap();
    let (read, mut write) = stream.into_split();
    let rest = body.as_bytes()[sent..].to_vec();
    let writer = tokio::spawn(async move {
        if let Some(after) = rest_after {
            tokio::time::sleep(after).await;
            write.write_all(&rest).await.unwrap();
        }
        // Held open until the answer is read.
        std::future::pending::<()>().await;
        drop(write);
    });
    let mut status = String::new();
    tokio::io::BufReader::new(read)
        .read_line(&mut status)
        .await
        .unwrap();
    writer.abort();
    status
}

/// A body still arriving is read only once the caller is known: a key that is no key is a 401
/// at once (waiting for the body would have been a 408 after 30 s), and a good key's call reads
/// its token on its own once the body is there.
#[tokio::test]
async fn a_body_still_arriving_is_read_once_the_caller_is_known() {
    on_each_backend(async |app| {
        let r = reactor(app, ECHO, json!([p("card", "string", false)]), json!({})).await;
        let path = format!("/reactors/{}/react", r["id"].as_str().unwrap());
        let owner = full(app).await;
        let mine = owner
            .create(&json!({"type": "token", "data": "4242"}))
            .await;
        let body = json!({"args": {"card": format!("{{{{ {} }}}}", mine["id"].as_str().unwrap())}})
            .to_string();
        let unknown = "key_00000000000000000000000000000000";
        let status = react_slowly(app, &path, unknown, &body, 5, None).await;
        assert!(status.starts_with("HTTP/1.1 401"), "{status}");
        let user = with(
            app,
            &[],
            json!([rule(1, "/general/", "reveal", &["token:use"])]),
        )
        .await;
        let later = Some(std::time::Duration::from_millis(200));
        let status = react_slowly(app, &path, &user.key, &body, 5, later).await;
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    })
    .await;
}

/// Code that runs with an application's rights may be changed only by whoever may lend that
/// application (decisions §9): a formula used by a reactor with an application, however the
/// change is made (the formula's code, or the reactor moved to another formula).
#[tokio::test]
async fn changing_code_that_runs_with_an_application_needs_the_right_to_lend() {
    on_each_backend(async |app| {
        let user = with(app, &["token:use"], json!([])).await;
        let acting = app
            .create_app(&json!({"name": unique("acting"), "type": "private",
                "permissions": ["token:create"]}))
            .await;
        let lent = formula(app, ECHO, json!([]), json!([])).await;
        let fid = lent["id"].as_str().unwrap();
        let r: Value = app
            .post(
                "/reactors",
                &json!({"name": unique("r"), "configuration": {}, "formula": {"id": fid},
                        "application": {"id": acting["id"]}}),
            )
            .await
            .json()
            .await
            .unwrap();
        let rid = r["id"].as_str().unwrap();
        let other = formula(app, ECHO, json!([]), json!([])).await;
        let limited = app
            .app(
                "management",
                &["reactor:create", "reactor:read", "reactor:update"],
            )
            .await;
        let limited = limited["key"].as_str();
        let steal =
            "module.exports = async () => ({ tokenize: { a: { type: 'token', data: 'x' } } });";
        let put = |path: String, body: Value| async move {
            app.request_as(limited, Method::PUT, &path)
                .json(&body)
                .send()
                .await
                .unwrap()
        };
        // The formula's code: 403, and it stays as it was.
        let res = put(
            format!("/reactor-formulas/{fid}"),
            json!({"name": lent["name"], "code": steal}),
        )
        .await;
        assert_problem(res, 403).await;
        let stored: Value = app
            .get(&format!("/reactor-formulas/{fid}"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(stored["code"], ECHO);
        let res = react(&user, &r["id"], json!({})).await;
        assert_eq!(res.status(), 200);
        assert_eq!(res.json::<Value>().await.unwrap()["raw"]["args"], json!({}));
        // Another field of it, the code as it is: allowed.
        let res = put(
            format!("/reactor-formulas/{fid}"),
            json!({"name": "renamed", "code": ECHO}),
        )
        .await;
        assert_eq!(res.status(), 200);
        // Moving the reactor to another formula: refused, with or without its application.
        let res = put(
            format!("/reactors/{rid}"),
            json!({"name": "r", "configuration": {}, "formula": {"id": other["id"]},
                   "application": {"id": acting["id"]}}),
        )
        .await;
        assert_problem(res, 403).await;
        let res = put(
            format!("/reactors/{rid}"),
            json!({"name": "r", "configuration": {}, "formula": {"id": other["id"]}}),
        )
        .await;
        assert_problem(res, 403).await;
        // Nor may it drop the application: the code would then be anyone's to rewrite, and a
        // lender's next routine PUT would lend it again.
        let res = put(
            format!("/reactors/{rid}"),
            json!({"name": "r2", "configuration": {}}),
        )
        .await;
        assert_problem(res, 403).await;
        let got: Value = app
            .get(&format!("/reactors/{rid}"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(got["formula"]["id"], lent["id"]);
        assert_eq!(got["application"]["id"], acting["id"]);
        // A formula no reactor with an application uses: its code is reactor:update's.
        let res = put(
            format!("/reactor-formulas/{}", other["id"].as_str().unwrap()),
            json!({"name": "other", "code": steal}),
        )
        .await;
        assert_eq!(res.status(), 200);
        // Whoever may lend the application may change the code it runs.
        let lender = app
            .app("management", &["reactor:update", "application:update"])
            .await;
        let res = app
            .request_as(
                lender["key"].as_str(),
                Method::PUT,
                &format!("/reactor-formulas/{fid}"),
            )
            .json(&json!({"name": "lent", "code": steal}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        // Once no reactor with an application uses it, reactor:update alone may again.
        let res = app
            .put(
                &format!("/reactors/{rid}"),
                &json!({"name": "r", "configuration": {}, "formula": {"id": fid}}),
            )
            .await;
        assert_eq!(res.status(), 200);
        let res = put(
            format!("/reactor-formulas/{fid}"),
            json!({"name": "lent", "code": ECHO}),
        )
        .await;
        assert_eq!(res.status(), 200);
    })
    .await;
}
