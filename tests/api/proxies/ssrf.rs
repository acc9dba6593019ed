//! The SSRF guard: destinations that are not public refused unless allowed, and a tail that never
//! climbs above the destination's path.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::destination::Destination;
use tokenvault_tests::{assert_invalid, on_each_backend_with};

use super::{assert_proxy_error, invoke, loopback, raw_get, simple};
use crate::tokens::with;

#[tokio::test]
async fn destinations_that_are_not_public_are_refused_unless_allowed() {
    // Only 127.0.0.1 is allowed: other loopback spellings and names resolving to it are not.
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let port = dest.url.rsplit(':').next().unwrap().to_string();
        for url in [
            format!("http://127.0.0.2:{port}"),
            format!("http://2130706434:{port}"),
            format!("http://[::1]:{port}"),
            format!("http://169.254.169.254:{port}"),
            format!("http://10.0.0.1:{port}"),
        ] {
            let res = app
                .post("/proxies", &json!({"name": "ssrf", "destination_url": url}))
                .await;
            assert_invalid(res, &["destination_url"]).await;
        }
        // A name is checked when it is resolved, at every call: refused, nothing sent.
        let by_name = simple(app, &format!("http://localhost:{port}")).await;
        let caller = with(app, &["token:use"], json!([])).await;
        let res = invoke(
            app,
            Some(&caller.key),
            by_name["key"].as_str().unwrap(),
            Method::GET,
            "",
            None,
        )
        .await;
        assert_proxy_error(res, 403).await;
        assert!(dest.received().is_empty());
        dest.assert_no_connection("a refused call").await;
    })
    .await;
    // By default only https to public addresses.
    on_each_backend_with(
        |_| {},
        async |app| {
            let res = app
                .post(
                    "/proxies",
                    &json!({"name": "http", "destination_url": "http://example.com/"}),
                )
                .await;
            assert_invalid(res, &["destination_url"]).await;
            let res = app
                .post(
                    "/proxies",
                    &json!({"name": "loop", "destination_url": "https://127.0.0.1/"}),
                )
                .await;
            assert_invalid(res, &["destination_url"]).await;
        },
    )
    .await;
}

/// The tail never climbs above the destination's path (decisions §8): not through a control
/// character the URL parser drops inside `..` (tab, CR, LF, in any case of their escapes), not
/// through an encoded dot, backslash or slash. Each is a 400 naming `path`, as a
/// `proxy_error`, and the destination never hears of it.
#[tokio::test]
async fn the_tail_stays_below_the_destination_however_spelled() {
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let created = simple(app, &format!("{}/api/v1/tenant-a", dest.url)).await;
        let key = created["key"].as_str().unwrap();
        let caller = with(app, &["token:use"], json!([])).await;
        for tail in [
            "/.%09./.%09./admin",
            "/.%0D./",
            "/.%0D./.%0D./admin",
            "/.%0A./admin",
            "/.%0a./admin",
            "/.%0d./admin",
            "/%2e%2e/admin",
            "/.%2E/admin",
            "/%2E./admin",
            "/%2E%09./admin",
            "/%09%2e%2e%09/admin",
            "/x/%2e%2e/%2e%2e/%2e%2e/admin",
            "/.%00./admin",
            "/.%7F./admin",
            "/a%09b",
            "/%2e",
            "/..%5Cadmin",
            "/..%5cadmin",
            "/..\\admin",
            "/.%09.\\admin",
            "/%5C..%5C..%5Cadmin",
            "/.%09.%5Cadmin",
            "/..%2Fadmin",
            "/..%2f..%2fadmin",
            "/a%2F..%2F..%2F..%2Fadmin",
            "/.%2F.%2E%2Fadmin",
        ] {
            let (status, body) = raw_get(app, &format!("/proxy{tail}"), &caller.key, key).await;
            assert_eq!(status, 400, "{tail}: {body}");
            let body: Value = serde_json::from_str(&body).unwrap();
            assert!(
                body["proxy_error"]["errors"]["path"].is_array(),
                "{tail}: {body}"
            );
        }
        let reached: Vec<String> = dest.received().into_iter().map(|r| r.target).collect();
        assert!(reached.is_empty(), "{reached:?}");
        // What stays below goes there, an encoded slash inside a segment kept as one.
        for (tail, target) in [
            ("/ok/path", "/api/v1/tenant-a/ok/path"),
            ("/a%2Fb", "/api/v1/tenant-a/a%2Fb"),
            ("/..a/b..", "/api/v1/tenant-a/..a/b.."),
            ("/a%20b/", "/api/v1/tenant-a/a%20b/"),
        ] {
            let (status, body) = raw_get(app, &format!("/proxy{tail}"), &caller.key, key).await;
            assert_eq!(status, 200, "{tail}: {body}");
            assert_eq!(dest.last().target, target, "{tail}");
        }
    })
    .await;
}
