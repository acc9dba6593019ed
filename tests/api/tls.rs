//! TLS terminated by the server itself (rustls): HTTPS with HTTP/2 by ALPN and HTTP/1.1 for
//! clients without it, with a certificate made here; plain HTTP on that port gets nothing; a
//! key that does not fit its certificate stops the server at start, naming the setting.

use std::path::PathBuf;

use serde_json::{Value, json};
use tokenvault_persistence::testing::backends;
use tokenvault_tests::{TestApp, client_for, full_private, unique};

/// A self-signed certificate for `localhost` and 127.0.0.1, and its key, as PEM files.
fn certificate() -> (PathBuf, PathBuf) {
    let made =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let dir = std::env::temp_dir().join(unique("tokenvault-tls"));
    std::fs::create_dir_all(&dir).unwrap();
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    (cert, key)
}

#[tokio::test]
async fn serves_https_with_http2_and_http11() {
    let (cert, key) = certificate();
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| {
            c.http.tls = Some(tokenvault_server::config::Tls {
                cert: cert.clone(),
                key: key.clone(),
            });
        })
        .await;
        assert!(app.base.starts_with("https://"), "{}", app.base);

        // ALPN picks HTTP/2 for a client that offers it.
        let res = app.get("/health").await;
        assert_eq!(res.status(), 200);
        assert_eq!(res.version(), reqwest::Version::HTTP_2);
        let key = full_private(&app).await;
        let made = app
            .request_as(Some(&key), reqwest::Method::POST, "/tokens")
            .json(&json!({"type": "token", "data": "over h2"}))
            .send()
            .await
            .unwrap();
        assert_eq!(made.status(), 201);
        assert_eq!(made.version(), reqwest::Version::HTTP_2);
        let id = made.json::<Value>().await.unwrap()["id"].clone();
        let read = app
            .request_as(
                Some(&key),
                reqwest::Method::GET,
                &format!("/tokens/{}", id.as_str().unwrap()),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(read.json::<Value>().await.unwrap()["data"], "over h2");

        // A client without HTTP/2 gets HTTP/1.1 on the same port.
        let http1 = reqwest::Client::builder()
            .add_root_certificate(
                reqwest::Certificate::from_pem(&std::fs::read(&cert).unwrap()).unwrap(),
            )
            .http1_only()
            .build()
            .unwrap();
        let res = http1
            .get(format!("{}/ready", app.base))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(res.version(), reqwest::Version::HTTP_11);

        // Plain HTTP on the TLS port is not served.
        let plain = app.base.replacen("https://", "http://", 1);
        let res = reqwest::get(format!("{plain}/health")).await;
        assert!(
            res.as_ref().map_or(true, |r| !r.status().is_success()),
            "{res:?}"
        );

        // A client that does not trust the certificate refuses the server.
        let untrusting = reqwest::Client::new();
        assert!(
            untrusting
                .get(format!("{}/health", app.base))
                .send()
                .await
                .is_err()
        );
        app.stop().await;
    }
    let _ = std::fs::remove_dir_all(cert.parent().unwrap());
}

#[tokio::test]
async fn a_key_that_does_not_fit_its_certificate_is_refused() {
    let (cert, _) = certificate();
    let (_, other_key) = certificate();
    let mut config = tokenvault_server::Config::for_tests("sqlite://unused".into(), "d".into());
    config.http.tls = Some(tokenvault_server::config::Tls {
        cert: cert.clone(),
        key: other_key.clone(),
    });
    let err = config.check_files().unwrap_err().to_string();
    assert!(err.contains("TOKENVAULT_TLS_KEY"), "{err}");
    config.http.tls = Some(tokenvault_server::config::Tls {
        cert: cert.clone(),
        key: cert.clone(),
    });
    let err = config.check_files().unwrap_err().to_string();
    assert!(err.contains("TOKENVAULT_TLS_KEY"), "{err}");
    // A certificate without its key is refused when the configuration is read.
    let file = cert.with_extension("toml");
    std::fs::write(
        &file,
        format!("tls_cert = {:?}\n", cert.display().to_string()),
    )
    .unwrap();
    let err = tokenvault_server::Config::load(Some(&file))
        .unwrap_err()
        .to_string();
    assert!(err.contains("TOKENVAULT_TLS_KEY"), "{err}");
    let _ = client_for(&config);
    let _ = std::fs::remove_dir_all(cert.parent().unwrap());
    let _ = std::fs::remove_dir_all(other_key.parent().unwrap());
}
