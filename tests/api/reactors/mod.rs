//! Reactor formulas, reactors and the eleven invocation rules, over HTTP on each database.

mod applications;
mod callers;
mod dry_run;
mod manage;
mod rules;

use serde_json::{Value, json};
use tokenvault_tests::{TestApp, unique};

use super::tokens::Client;

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
