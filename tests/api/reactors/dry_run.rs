//! `POST /reactor-formulas/dry-run`: code run once against sample arguments and configuration,
//! nothing stored, no token read; what it returned or how it failed (with the line), and its
//! console lines; who may run one.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::{TestApp, assert_invalid, assert_problem, on_each_backend, unique};

use crate::tokens::full;

const PATH: &str = "/reactor-formulas/dry-run";

async fn dry_run(app: &TestApp, key: &str, body: &Value) -> reqwest::Response {
    app.request_as(Some(key), Method::POST, PATH)
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn shown(app: &TestApp, body: &Value) -> Value {
    let res = dry_run(app, &app.key, body).await;
    assert_eq!(res.status(), 200);
    res.json().await.unwrap()
}

#[tokio::test]
async fn a_dry_run_shows_what_the_code_returned_and_wrote_and_keeps_nothing() {
    on_each_backend(async |app| {
        let owner = full(app).await;
        let token = owner.create(&json!({"type": "token", "data": "secret value"})).await;
        let expression = format!("{{{{ {} }}}}", token["id"].as_str().unwrap());
        let code = r"module.exports = async (req) => {
            console.log('args are', JSON.stringify(req.args));
            console.error('<b>not html</b>');
            return { raw: { args: req.args, fee: req.configuration.fee, svc: req.svc },
                     tokenize: { card: { type: 'token', data: 'never stored' } } };
        };";
        let before: Value = app.get("/reactor-formulas").await.json().await.unwrap();
        let out = shown(
            app,
            &json!({"code": code, "args": {"name": expression, "n": 2}, "configuration": {"fee": 1.5}}),
        )
        .await;
        assert_eq!(
            out["raw"],
            json!({"args": {"name": expression, "n": 2}, "fee": 1.5, "svc": null}),
            "arguments as given: no expression replaced, no svc: {out}"
        );
        assert_eq!(out["tokenize"]["card"]["data"], "never stored", "{out}");
        assert!(out.get("error").is_none(), "{out}");
        assert_eq!(
            out["console"],
            json!([{"level": "info", "message": format!("args are {{\"n\":2,\"name\":\"{expression}\"}}")},
                   {"level": "error", "message": "<b>not html</b>"}])
        );
        let after: Value = app.get("/reactor-formulas").await.json().await.unwrap();
        assert_eq!(after["pagination"], before["pagination"], "no formula stored");
        let usage: Value = app.get("/tenants/self/reports/usage").await.json().await.unwrap();
        assert_eq!(
            usage["token_report"]["metrics_by_type"]["token"]["count"], 1,
            "the tokenize block made no token: {usage}"
        );
        let touched: Value = app
            .get(&format!("/logs?entity_id={}", token["id"].as_str().unwrap()))
            .await
            .json()
            .await
            .unwrap();
        let operations: Vec<&Value> = touched["data"].as_array().unwrap().iter().map(|e| &e["operation"]).collect();
        assert_eq!(operations, [&json!("create")], "the token was made, never read nor used: {touched}");
        let logs: Value = app.get("/logs?entity_type=formula").await.json().await.unwrap();
        let entry = &logs["data"][0];
        assert_eq!((&entry["operation"], &entry["entity_id"]), (&json!("dry_run"), &json!("*")), "{logs}");
        // Anything else the code returns is the raw answer, as an invocation's.
        let out = shown(app, &json!({"code": "module.exports = async () => 'plain'"})).await;
        assert_eq!((&out["raw"], &out["console"]), (&json!("plain"), &json!([])));
    })
    .await;
}

#[tokio::test]
async fn a_dry_run_shows_how_the_code_failed_and_where() {
    on_each_backend(async |app| {
        let out = shown(
            app,
            &json!({"code": "module.exports = async (req) => {\n  const a = 1;\n  return a +;\n};"}),
        )
        .await;
        let error = &out["error"];
        assert_eq!((&error["kind"], &error["status"], &error["line"]), (&json!("compile"), &json!(422), &json!(3)), "{out}");
        assert!(error["message"].as_str().unwrap().contains("SyntaxError"), "{out}");
        let out = shown(
            app,
            &json!({"code": "module.exports = async () => {\n  console.warn('before');\n  throw new BadRequestError('no good');\n};"}),
        )
        .await;
        assert_eq!(
            out["error"],
            json!({"kind": "thrown", "status": 400, "message": "no good", "errors": "no good", "line": 3}),
            "{out}"
        );
        assert_eq!(out["console"], json!([{"level": "warn", "message": "before"}]), "the lines before the throw are shown");
        let out = shown(
            app,
            &json!({"code": "module.exports = async () => { throw new CustomHttpResponseError({status: 302, headers: {Location: 'x'}, body: {a: 1}}); };"}),
        )
        .await;
        assert_eq!(
            out["error"],
            json!({"kind": "custom_response", "status": 302, "headers": {"Location": "x"}, "body": {"a": 1}}),
            "{out}"
        );
        let out = shown(
            app,
            &json!({"code": "module.exports = async () => { const a = []; while (true) a.push('x'.repeat(1024)); };"}),
        )
        .await;
        assert_eq!((&out["error"]["kind"], &out["error"]["status"]), (&json!("limit"), &json!(500)), "{out}");
    })
    .await;
}

#[tokio::test]
async fn a_dry_run_needs_a_right_to_write_code_and_names_bad_fields() {
    on_each_backend(async |app| {
        let ok = json!({"code": "module.exports = async () => 1"});
        let writer = |permission: &str| {
            json!({"name": unique("writer"), "type": "management", "permissions": [permission]})
        };
        for (permission, status) in [("reactor:update", 200), ("reactor:create", 200), ("reactor:read", 403)] {
            let key = app.create_app(&writer(permission)).await["key"].as_str().unwrap().to_string();
            assert_eq!(dry_run(app, &key, &ok).await.status(), status, "{permission}");
        }
        let user = full(app).await;
        assert_problem(dry_run(app, &user.key, &ok).await, 403).await;
        assert_problem(dry_run(app, "key_00000000000000000000000000000000", &ok).await, 401).await;
        assert_invalid(
            dry_run(app, &app.key, &json!({"code": 7, "args": [1], "configuration": "x"})).await,
            &["code", "args", "configuration"],
        )
        .await;
        assert_invalid(dry_run(app, &app.key, &json!({})).await, &["code"]).await;
        assert_invalid(dry_run(app, &app.key, &json!({"code": "x".repeat(50_001)})).await, &["code"]).await;
        let logs: Value = app.get("/logs?entity_type=formula").await.json().await.unwrap();
        assert_eq!(logs["pagination"]["total_items"], 2, "only the two runs that ran are recorded: {logs}");
    })
    .await;
}
