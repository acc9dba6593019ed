//! Operating the server: health, bootstrap across restarts, graceful shutdown, OpenAPI.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;
use tokenvault_persistence::testing::backends;
use tokenvault_tests::{TestApp, on_each_backend};

#[tokio::test]
async fn bootstrap_is_idempotent_across_restarts() {
    for backend in backends() {
        let mut app = TestApp::spawn(backend).await;
        let first: Value = app.get("/tenants/self").await.json().await.unwrap();
        app.restart().await;
        let again: Value = app.get("/tenants/self").await.json().await.unwrap();
        assert_eq!(first["id"], again["id"]);
        let apps: Value = app.get("/applications").await.json().await.unwrap();
        assert_eq!(
            apps["pagination"]["total_items"], 1,
            "no second bootstrap application"
        );
        app.stop().await;
    }
}

#[tokio::test]
async fn in_flight_request_finishes_on_shutdown() {
    for backend in backends() {
        let mut app = TestApp::spawn(backend).await;
        let addr = app.base.trim_start_matches("http://").to_string();
        let key = app.key.clone();
        let body = br#"{"name":"late","type":"private","permissions":["token:read"]}"#;
        // Send the headers and half the body, so the request is in flight when shutdown begins.
        let mut stream = TcpStream::connect(&addr).unwrap();
        write!(
            stream,
            "POST /applications HTTP/1.1\r\nHost: {addr}\r\nSVC-API-KEY: {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .unwrap();
        stream.write_all(&body[..20]).unwrap();
        stream.flush().unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let finishing = tokio::task::spawn_blocking(move || {
            std::thread::sleep(Duration::from_millis(300));
            stream.write_all(&body[20..]).unwrap();
            let mut response = String::new();
            stream.read_to_string(&mut response).unwrap();
            response
        });
        app.shutdown()
            .await
            .expect("run returns Ok after a graceful stop");
        let response = finishing.await.unwrap();
        assert!(
            response.starts_with("HTTP/1.1 201"),
            "in-flight request was cut: {response}"
        );
        app.stop().await;
    }
}

#[tokio::test]
async fn openapi_document_is_served() {
    on_each_backend(async |app| {
        let doc: Value = app.get("/openapi.json").await.json().await.unwrap();
        assert!(doc["paths"]["/applications"]["post"].is_object());
        assert!(doc["paths"]["/tenants/self"]["put"].is_object());
        let committed =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json"))
                .unwrap();
        assert_eq!(serde_json::from_str::<Value>(&committed).unwrap(), doc);
    })
    .await;
}
