//! `/console` as served: every file under a strict Content-Security-Policy, no framing, the
//! scripts as JavaScript, an unknown file a 404, and nothing at all with `TOKENVAULT_CONSOLE=off`.
//! (What the pages do is tested in a real browser: `tests/console/`.)

use reqwest::Method;
use tokenvault_tests::{on_each_backend, on_each_backend_with};

async fn fetch(app: &tokenvault_tests::TestApp, path: &str) -> reqwest::Response {
    app.request_as(None, Method::GET, path)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_console_is_served_under_a_strict_policy() {
    on_each_backend(async |app| {
        for (path, kind) in [
            ("/console", "text/html"),
            ("/console/js/app.js", "text/javascript"),
            ("/console/console.css", "text/css"),
        ] {
            let res = fetch(app, path).await;
            let header = |name: &str| {
                res.headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string()
            };
            let csp = header("content-security-policy");
            for directive in [
                "default-src 'none'",
                "script-src 'self';",
                "frame-ancestors 'none'",
                "connect-src 'self'",
            ] {
                assert!(csp.contains(directive), "{path}: {csp}");
            }
            assert!(
                !csp.contains("unsafe"),
                "{path}: no inline script, no eval: {csp}"
            );
            assert_eq!(header("x-frame-options"), "DENY", "{path}");
            assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
            assert!(header("content-type").starts_with(kind), "{path}");
            assert_eq!(res.status(), 200, "{path}");
            let body = res.text().await.unwrap();
            if path == "/console" {
                assert!(
                    body.contains("<script type=\"module\" src=\"/console/js/app.js\">"),
                    "{body}"
                );
                assert!(!body.contains("<script>"), "no inline script");
            }
        }
        // The console never needs a key to be served; the API it calls does.
        assert_eq!(fetch(app, "/console/js/api.js").await.status(), 200);
        // A file it does not have is a 404 like any unknown path.
        for path in [
            "/console/nothing-here.js",
            "/console/../Cargo.toml",
            "/console/js/../../ARCHITECTURE.md",
        ] {
            assert_eq!(fetch(app, path).await.status(), 404, "{path}");
        }
    })
    .await;
}

#[tokio::test]
async fn the_console_can_be_switched_off() {
    let off = |config: &mut tokenvault_server::Config| config.http.console = false;
    on_each_backend_with(off, async |app| {
        for path in ["/console", "/console/js/app.js"] {
            let res = fetch(app, path).await;
            assert_eq!(res.status(), 404, "{path}");
            assert!(
                res.headers().get("content-security-policy").is_none(),
                "{path}"
            );
        }
        assert_eq!(fetch(app, "/health").await.status(), 200);
    })
    .await;
}

/// What a tenant's code or destination answers is served on the console's origin: a browser
/// opening it as a page runs it sandboxed (its own opaque origin: no console storage, no
/// service worker of the origin), whatever headers the tenant chose.
#[tokio::test]
async fn a_response_a_tenant_shaped_is_sandboxed_on_the_consoles_origin() {
    on_each_backend(async |app| {
        let code = r"module.exports = async () => {
            throw new CustomHttpResponseError({ status: 200,
                headers: { 'Content-Type': 'text/html', 'Service-Worker-Allowed': '/',
                           'Content-Security-Policy': 'script-src *' },
                body: '<script>navigator.serviceWorker.register(\'/x\', {scope: \'/\'})</script>' });
        };";
        let r = crate::reactors::reactor(app, code, serde_json::json!([]), serde_json::json!({})).await;
        let user = crate::tokens::with(app, &["token:use"], serde_json::json!([])).await;
        let res = crate::reactors::react(&user, &r["id"], serde_json::json!({})).await;
        assert_eq!(res.status(), 200);
        assert!(res.headers().get("service-worker-allowed").is_none());
        let policies: Vec<&str> = res
            .headers()
            .get_all("content-security-policy")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        assert!(policies.contains(&"sandbox"), "{policies:?}");
        assert!(policies.contains(&"script-src *"), "the tenant's own policy still applies too: {policies:?}");
    })
    .await;
}
