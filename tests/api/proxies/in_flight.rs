//! Calls in flight: a client that leaves, a shutdown that waits, and a tenant's audit log that
//! stays behind.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::destination::{Answer, Destination};
use tokenvault_tests::{TestApp, on_each_backend_with};

use super::{assert_proxy_error, invoke, loopback, proxy, simple};
use crate::tokens::with;

/// Sends `GET /proxy` on a raw connection and resets it `after` later, while the destination
/// has not answered yet.
async fn get_and_leave(app: &TestApp, dest: &Destination, api_key: &str, proxy_key: &str) {
    use tokio::io::AsyncWriteExt;
    let addr = app.base.trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let request = format!(
        "GET /proxy/left HTTP/1.1\r\nHost: {addr}\r\nSVC-API-KEY: {api_key}\r\n\
         SVC-PROXY-KEY: {proxy_key}\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    // Leave only once the call is in flight (the destination has it and holds its answer),
    // however slowly a loaded machine gets there.
    let waiting = std::time::Instant::now();
    while dest.received().is_empty() {
        assert!(
            waiting.elapsed() < Duration::from_secs(20),
            "the call never reached the destination"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Linger zero: the close is a reset, which actix sees as the client gone.
    stream.set_zero_linger().unwrap();
    drop(stream);
}

/// The proxy invocations in the tenant's audit log.
async fn invocations(app: &TestApp, proxy_id: &str) -> usize {
    let res = app
        .get(&format!(
            "/logs?size=100&entity_type=proxy&entity_id={proxy_id}"
        ))
        .await;
    assert_eq!(res.status(), 200);
    let page: Value = res.json().await.unwrap();
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["operation"] == "invoke")
        .count()
}

/// A proxy call detokenizes data to its destination whatever its method: a `GET` whose client
/// leaves while the destination answers runs to completion, audit entry included.
#[tokio::test]
async fn a_proxy_get_whose_client_leaves_still_completes() {
    on_each_backend_with(loopback, async |app| {
        let dest = Destination::start("127.0.0.1").await;
        dest.answer(Answer {
            delay: Duration::from_millis(600),
            ..Answer::default()
        });
        let caller = with(app, &["token:use"], json!([])).await;
        let p = simple(app, &dest.url).await;
        let id = p["id"].as_str().unwrap();
        get_and_leave(app, &dest, &caller.key, p["key"].as_str().unwrap()).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(dest.received().len(), 1);
        assert_eq!(
            invocations(app, id).await,
            1,
            "the call was cut with its client"
        );
    })
    .await;
}

/// Shutdown waits for a call whose client left (it holds no connection, so graceful stop
/// alone would drop it with the worker): its audit entry is written before the server stops.
#[tokio::test]
async fn shutdown_waits_for_a_proxy_call_whose_client_left() {
    for backend in tokenvault_persistence::testing::backends() {
        let mut app = TestApp::spawn_with(backend, loopback).await;
        let dest = Destination::start("127.0.0.1").await;
        dest.answer(Answer {
            delay: Duration::from_millis(600),
            ..Answer::default()
        });
        let caller_key = with(&app, &["token:use"], json!([])).await.key;
        let p = simple(&app, &dest.url).await;
        let id = p["id"].as_str().unwrap().to_string();
        get_and_leave(&app, &dest, &caller_key, p["key"].as_str().unwrap()).await;
        let started = std::time::Instant::now();
        app.restart().await;
        assert_eq!(dest.received().len(), 1);
        assert_eq!(
            invocations(&app, &id).await,
            1,
            "the call was cut by the shutdown (stopped after {:?})",
            started.elapsed()
        );
        app.stop().await;
    }
}

/// A proxy call waits for room in its proxy's tenant's audit log as any request does (decisions
/// §11): with every tenant's log behind (the mark at 0) it is refused with a 503 proxy error and
/// `Retry-After`, and nothing is sent.
#[tokio::test]
async fn a_proxy_call_whose_tenants_audit_log_stays_behind_gets_503_and_sends_nothing() {
    for backend in tokenvault_persistence::testing::backends() {
        let mut app = TestApp::spawn_with(backend, loopback).await;
        let dest = Destination::start("127.0.0.1").await;
        let open = proxy(
            &app,
            json!({"name": "open", "destination_url": dest.url, "require_auth": false}),
        )
        .await;
        app.restart_with(|c| c.audit_high_water = 0).await;
        let key = open["key"].as_str().unwrap();
        let res = invoke(&app, None, key, Method::POST, "", Some(&json!({"v": 1}))).await;
        assert_eq!(res.headers()["retry-after"], "1");
        assert_proxy_error(res, 503).await;
        assert!(dest.received().is_empty(), "nothing was sent");
        dest.assert_no_connection("a refused call").await;
        app.stop().await;
    }
}
