//! Forwarding to the destination: the request as sent without the vault's headers, the
//! destination's answers as they are, and a slow or missing destination as a proxy error.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::destination::{Answer, Destination};
use tokenvault_tests::on_each_backend_with;

use super::{assert_proxy_error, invoke, loopback, simple};
use crate::tokens::with;

#[tokio::test]
async fn requests_are_forwarded_as_sent_without_the_vaults_headers() {
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        let p = simple(app, &format!("{}/base/", dest.url)).await;
        let key = p["key"].as_str().unwrap();
        let caller = with(app, &["token:use"], json!([])).await;
        let res = app
            .request_as(Some(&caller.key), Method::PUT, "/proxy/one/two?a=1&b=x%20y")
            .header("SVC-PROXY-KEY", key)
            .header("X-Custom", "kept")
            .header("SVC-Extra", "dropped")
            .json(&json!({"hello": "world"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()["svc-proxy-destination-status"], "200");
        assert_eq!(res.json::<Value>().await.unwrap(), json!({"ok": true}));
        let got = dest.last();
        assert_eq!(got.method, "PUT");
        assert_eq!(got.target, "/base/one/two?a=1&b=x%20y");
        assert_eq!(got.json(), json!({"hello": "world"}));
        assert_eq!(got.header("x-custom"), Some("kept"));
        assert!(
            got.headers.iter().all(|(n, _)| !n.starts_with("svc-")),
            "{:?}",
            got.headers
        );
        let raw = format!("{:?}", got.headers);
        assert!(!raw.contains(&caller.key) && !raw.contains(key));
        // The key may come in the query instead; it is not forwarded. Every method goes.
        for method in [Method::GET, Method::POST, Method::PATCH, Method::DELETE] {
            let res = app
                .request_as(
                    Some(&caller.key),
                    method.clone(),
                    &format!("/proxy?svc-proxy-key={key}&keep=1"),
                )
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200);
            let got = dest.last();
            assert_eq!(got.method, method.as_str());
            assert_eq!(got.target, "/base?keep=1");
        }
        // The destination's own errors come back as they are.
        dest.answer(Answer {
            status: 503,
            headers: vec![
                ("x-dest".into(), "yes".into()),
                ("svc-internal".into(), "no".into()),
            ],
            body: b"down for maintenance".to_vec(),
            ..Answer::default()
        });
        let res = invoke(app, Some(&caller.key), key, Method::GET, "", None).await;
        assert_eq!(res.status(), 503);
        assert_eq!(res.headers()["svc-proxy-destination-status"], "503");
        assert_eq!(res.headers()["x-dest"], "yes");
        assert!(res.headers().get("svc-internal").is_none());
        assert_eq!(res.text().await.unwrap(), "down for maintenance");
        let metrics = app.get("/metrics").await.text().await.unwrap();
        assert!(
            metrics.contains("tokenvault_proxy_calls_total{destination_status=\"503\"} 1"),
            "{metrics}"
        );
        assert!(
            metrics.contains("tokenvault_proxy_calls_total{destination_status=\"200\"} 5"),
            "{metrics}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_slow_or_missing_destination_is_a_proxy_error() {
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        dest.answer(Answer {
            delay: Duration::from_secs(3),
            ..Answer::default()
        });
        let caller = with(app, &["token:use"], json!([])).await;
        let slow = simple(app, &dest.url).await;
        let res = invoke(
            app,
            Some(&caller.key),
            slow["key"].as_str().unwrap(),
            Method::GET,
            "",
            None,
        )
        .await;
        assert_proxy_error(res, 504).await;
        // A port nobody listens on.
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let gone = simple(app, &format!("http://127.0.0.1:{closed}")).await;
        let res = invoke(
            app,
            Some(&caller.key),
            gone["key"].as_str().unwrap(),
            Method::GET,
            "",
            None,
        )
        .await;
        assert_proxy_error(res, 502).await;
    })
    .await;
}
