//! The console in a real headless Chromium against a real server, on each database: a wrong key
//! refused; the bootstrap key logs in; an application made with a rule, its key read once; a
//! formula written and dry-run, its failure shown with its line; the three actions in the
//! audit log and its chain verified; the usage charts; a value holding markup shown as text;
//! the key never in a cookie or storage unless asked for.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod browser;
mod reading;

use browser::Browser;
use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::{TestApp, on_each_backend, random_key};

/// A name that would run script if the console ever rendered it as HTML.
const MARKUP: &str = "<script>window.pwned=1</script><img src=x onerror=\"window.pwned=2\">";

const CODE: &str = "module.exports = async (req) => {\n  console.log('fee is', req.configuration.fee);\n  return { raw: { total: req.args.amount + req.configuration.fee } };\n};";

pub(crate) async fn nav(b: &Browser, page: &str) {
    b.click(&format!("nav a[href=\"#/{page}\"]")).await;
    b.element(&format!("#page-{page}")).await;
}

/// Opens the console and logs in with `key`; the tenant page (or its refusal) is shown.
pub(crate) async fn log_in_with(b: &Browser, app: &TestApp, key: &str) {
    b.client
        .goto(&format!("{}/console", app.base))
        .await
        .unwrap();
    b.type_into("#key", key).await;
    b.click("#login-submit").await;
    b.element("#page-tenant").await;
}

async fn log_in(b: &Browser, app: &TestApp) {
    b.client
        .goto(&format!("{}/console", app.base))
        .await
        .unwrap();
    b.type_into("#key", &random_key()).await;
    b.click("#login-submit").await;
    b.text_until("#login-error", |t| t.contains("refused (401)"))
        .await;
    assert_eq!(
        b.script("return document.getElementById('nav').hidden", vec![])
            .await,
        json!(true)
    );
    b.type_into("#key", &app.key).await;
    b.click("#login-submit").await;
    let tenant: Value = app.get("/tenants/self").await.json().await.unwrap();
    let id = tenant["id"].as_str().unwrap().to_string();
    b.text_until("#tenant-id", |t| t == id).await;
    b.screenshot("tenant").await;
}

/// Creates an application named [`MARKUP`] with a rule; returns the key the page showed once.
async fn create_application(b: &Browser, app: &TestApp) -> String {
    nav(b, "applications").await;
    b.type_into("#app-name", MARKUP).await;
    b.click("#app-permissions input[data-permission=\"token:create\"]")
        .await;
    b.type_into(
        "#app-rules",
        r#"[{"description": "masked reads", "priority": 1, "container": "/", "transform": "mask", "permissions": ["token:read"]}]"#,
    )
    .await;
    b.click("#app-create").await;
    let key = b.text_until("#new-key", |t| t.starts_with("key_")).await;
    // The key works, and made the application as asked.
    let made = app
        .request_as(Some(&key), Method::POST, "/tokens")
        .json(&json!({"type": "token", "data": "made with the key shown once"}))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 201, "the key shown works");
    let listed: Value = app
        .get("/applications?size=100")
        .await
        .json()
        .await
        .unwrap();
    let mine = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == MARKUP)
        .expect("the application, named as typed");
    assert_eq!(mine["permissions"], json!(["token:create"]));
    assert_eq!(mine["rules"][0]["transform"], "mask", "{mine}");
    // Shown as text, never run.
    let listed = b
        .script(
            "return [...document.querySelectorAll('#application-list td')].some(td => td.textContent === arguments[0])",
            vec![json!(MARKUP)],
        )
        .await;
    assert_eq!(listed, json!(true), "the name is listed as it was given");
    b.screenshot("applications").await;
    let harmless = b
        .script(
            "return window.pwned === undefined && !document.querySelector('main script, main img')",
            vec![],
        )
        .await;
    assert_eq!(harmless, json!(true), "markup in a value is text");
    // Once: gone from the page when it is shown again.
    nav(b, "tenant").await;
    nav(b, "applications").await;
    b.element("#application-list table").await;
    let seen = b
        .script(
            "return document.body.textContent.includes(arguments[0])",
            vec![json!(key)],
        )
        .await;
    assert_eq!(seen, json!(false), "the key is shown once");
    key
}

async fn write_and_dry_run(b: &Browser, app: &TestApp) {
    nav(b, "reactors").await;
    b.type_into("#formula-name", "fees").await;
    b.type_into("#formula-code", CODE).await;
    b.type_into(
        "#formula-configuration",
        r#"[{"name": "fee", "type": "number"}]"#,
    )
    .await;
    b.type_into(
        "#formula-parameters",
        r#"[{"name": "amount", "type": "number", "optional": false}]"#,
    )
    .await;
    b.click("#formula-save").await;
    b.text_until("#formula-list", |t| t.contains("fees")).await;
    let stored: Value = app
        .get("/reactor-formulas?name=fees")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        stored["data"][0]["code"], CODE,
        "the editor's text is what was stored"
    );
    b.type_into("#dry-run-args", r#"{"amount": 40}"#).await;
    b.type_into("#dry-run-configuration", r#"{"fee": 2}"#).await;
    b.click("#dry-run").await;
    let out = b
        .text_until("#dry-run-output", |t| t.contains("total"))
        .await;
    assert!(out.contains("\"total\": 42"), "{out}");
    assert!(out.contains("[info] fee is 2"), "{out}");
    let highlighted = b
        .script(
            "return document.querySelectorAll('.editor .tok-kw').length > 0",
            vec![],
        )
        .await;
    assert_eq!(highlighted, json!(true), "the code is highlighted");
    b.screenshot("reactors").await;
    b.type_into(
        "#formula-code",
        "module.exports = async () => {\n  return 1 +;\n};",
    )
    .await;
    b.click("#dry-run").await;
    let error = b
        .text_until("#dry-run-output", |t| t.contains("Error"))
        .await;
    assert!(
        error.contains("compile") && error.contains("line 2"),
        "{error}"
    );
    // A thrown error shows the line it was made on too.
    b.type_into(
        "#formula-code",
        "module.exports = async () => {\n  const small = 1;\n  throw new BadRequestError('too small');\n};",
    )
    .await;
    b.click("#dry-run").await;
    let error = b
        .text_until("#dry-run-output", |t| t.contains("too small"))
        .await;
    assert!(
        error.contains("thrown") && error.contains("answer 400") && error.contains("line 3"),
        "{error}"
    );
}

async fn audit_log(b: &Browser) {
    nav(b, "logs").await;
    b.element("#log-list table").await;
    let rows = b
        .script(
            "return [...document.querySelectorAll('#log-list tbody tr')].map(tr => [tr.children[3].textContent, tr.children[4].textContent])",
            vec![],
        )
        .await;
    for action in [
        json!(["create", "application"]),
        json!(["create", "formula"]),
        json!(["dry_run", "formula"]),
    ] {
        assert!(
            rows.as_array().unwrap().contains(&action),
            "{action} in {rows}"
        );
    }
    b.click("#log-verify").await;
    b.text_until("#log-verify-result", |t| t.contains("The chain holds"))
        .await;
    b.screenshot("audit-log").await;
}

#[tokio::test]
async fn an_operator_manages_the_tenant_from_a_browser() {
    on_each_backend(async |app| {
        let b = Browser::start().await;
        log_in(&b, app).await;
        create_application(&b, app).await;
        write_and_dry_run(&b, app).await;
        audit_log(&b).await;
        nav(&b, "usage").await;
        b.element("#chart-months rect").await;
        b.screenshot("usage").await;
        let kept = b
            .script(
                "return [document.cookie, localStorage.length, sessionStorage.length]",
                vec![],
            )
            .await;
        assert_eq!(
            kept,
            json!(["", 0, 0]),
            "the key lives in the tab's memory only"
        );
        b.click("#logout").await;
        b.element("#login").await;
        b.stop().await;
    })
    .await;
}

#[tokio::test]
async fn a_key_kept_for_the_tab_survives_a_reload_and_goes_at_logout() {
    on_each_backend(async |app| {
        let b = Browser::start().await;
        b.client
            .goto(&format!("{}/console", app.base))
            .await
            .unwrap();
        b.type_into("#key", &app.key).await;
        b.click("#remember").await;
        b.click("#login-submit").await;
        b.element("#tenant-id").await;
        b.client.refresh().await.unwrap();
        b.element("#tenant-id").await;
        let kept = b
            .script(
                "return [document.cookie, localStorage.length, sessionStorage.length]",
                vec![],
            )
            .await;
        assert_eq!(kept, json!(["", 0, 1]), "sessionStorage only, as asked");
        b.click("#logout").await;
        b.element("#login").await;
        assert_eq!(
            b.script("return sessionStorage.length", vec![]).await,
            json!(0)
        );
        b.stop().await;
    })
    .await;
}

#[tokio::test]
async fn a_key_revoked_while_in_use_returns_to_the_login() {
    on_each_backend(async |app| {
        let manager = app
            .create_app(&json!({"name": "console user", "type": "management",
                                "permissions": ["tenant:read", "log:read"]}))
            .await;
        let b = Browser::start().await;
        b.client
            .goto(&format!("{}/console", app.base))
            .await
            .unwrap();
        b.type_into("#key", manager["key"].as_str().unwrap()).await;
        b.click("#login-submit").await;
        b.element("#tenant-id").await;
        // A page its key may not read shows the refusal, and the user stays.
        nav(&b, "applications").await;
        b.text_until("#page-applications", |t| t.contains("403"))
            .await;
        let deleted = app
            .delete(&format!(
                "/applications/{}",
                manager["id"].as_str().unwrap()
            ))
            .await;
        assert_eq!(deleted.status(), 204);
        b.click("nav a[href=\"#/logs\"]").await;
        b.text_until("#login-error", |t| t.contains("refused (401)"))
            .await;
        let kept = b
            .script("return [document.cookie, sessionStorage.length]", vec![])
            .await;
        assert_eq!(kept, json!(["", 0]));
        b.stop().await;
    })
    .await;
}
