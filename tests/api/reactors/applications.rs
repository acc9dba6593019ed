//! A reactor's application: `svc` acting with its rights, an expired one no longer acting, and
//! the right to lend it needed to change the code it runs.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::{assert_invalid, assert_problem, on_each_backend, rule, unique};

use super::{ECHO, formula, p, react, reactor};
use crate::tokens::{full, with};

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
