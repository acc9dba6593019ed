//! Who may invoke a reactor: keys of its own tenant only, a named token read with the caller's
//! key, and a body read only once the caller is known.

use reqwest::Method;
use serde_json::{Value, json};
use tokenvault_tests::{TestApp, assert_invalid, assert_problem, on_each_backend, rule, unique};

use super::{ECHO, p, react, reactor};
use crate::tokens::{full, with};

/// The reactor is read in the same round trip as the caller's key: only a reactor of the key's
/// own tenant, with or without an idempotency key (whose middleware authenticates first), and
/// a deleted one is gone at once.
#[tokio::test]
async fn a_reactor_is_invoked_only_with_keys_of_its_tenant() {
    on_each_backend(async |app| {
        let r = reactor(app, ECHO, json!([p("name", "string", false)]), json!({})).await;
        let path = format!("/reactors/{}/react", r["id"].as_str().unwrap());
        let user = with(app, &["token:use"], json!([])).await;
        let res = react(&user, &r["id"], json!({"name": "a"})).await;
        assert_eq!(res.status(), 200);

        // A private key of another tenant with `token:use`: no such reactor.
        let (_, other_management) = app.new_tenant(&unique("other")).await;
        let res = app
            .request_as(Some(&other_management), Method::POST, "/applications")
            .json(&json!({"name": "x", "type": "private", "permissions": ["token:use"]}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
        let other: Value = res.json().await.unwrap();
        let res = app
            .request_as(other["key"].as_str(), Method::POST, &path)
            .json(&json!({"args": {"name": "a"}}))
            .send()
            .await
            .unwrap();
        assert_problem(res, 404).await;

        // With an idempotency key.
        let res = app
            .request_as(Some(&user.key), Method::POST, &path)
            .header("SVC-IDEMPOTENCY-KEY", unique("react"))
            .json(&json!({"args": {"name": "b"}}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["raw"]["args"], json!({"name": "b"}));

        // A bad key is refused whatever the path names; a deleted reactor is gone at once.
        let res = app
            .request_as(
                Some("key_00000000000000000000000000000000"),
                Method::POST,
                &path,
            )
            .json(&json!({"args": {"name": "a"}}))
            .send()
            .await
            .unwrap();
        assert_problem(res, 401).await;
        let res = app
            .delete(&format!("/reactors/{}", r["id"].as_str().unwrap()))
            .await;
        assert_eq!(res.status(), 204);
        assert_problem(react(&user, &r["id"], json!({"name": "a"})).await, 404).await;
    })
    .await;
}

/// A call naming one token has it read with the caller's key (decisions §9): the same answers
/// as any detokenization — its own tenant's token only, `token:use` on its container — and the
/// body is answered for only once the caller is known.
#[tokio::test]
async fn a_calls_one_token_is_read_with_its_key_and_decided_as_any() {
    on_each_backend(async |app| {
        let r = reactor(app, ECHO, json!([p("card", "string", false)]), json!({})).await;
        let path = format!("/reactors/{}/react", r["id"].as_str().unwrap());
        let owner = full(app).await;
        let mine = owner
            .create(&json!({"type": "token", "data": "4242"}))
            .await;
        let mine = format!("{{{{ {} }}}}", mine["id"].as_str().unwrap());
        let user = with(
            app,
            &[],
            json!([rule(1, "/general/", "reveal", &["token:use"])]),
        )
        .await;
        let res = react(&user, &r["id"], json!({"card": mine})).await;
        assert_eq!(res.status(), 200);
        assert_eq!(
            res.json::<Value>().await.unwrap()["raw"]["args"],
            json!({"card": "4242"})
        );
        // token:use on another container only: refused.
        let narrow = with(
            app,
            &[],
            json!([rule(1, "/pci/", "reveal", &["token:use"])]),
        )
        .await;
        assert_problem(react(&narrow, &r["id"], json!({"card": mine})).await, 403).await;

        // Another tenant's token by its id: no such token here, never its data.
        let (_, other_management) = app.new_tenant(&unique("other")).await;
        let writer = app
            .create_app_as(
                &other_management,
                &json!({"name": "w", "type": "private", "permissions": ["token:create"]}),
            )
            .await;
        let res = app
            .request_as(writer["key"].as_str(), Method::POST, "/tokens")
            .json(&json!({"type": "token", "data": "theirs"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
        let theirs: Value = res.json().await.unwrap();
        let theirs = format!("{{{{ {} }}}}", theirs["id"].as_str().unwrap());
        let body = assert_invalid(
            react(&user, &r["id"], json!({"card": theirs})).await,
            &["args"],
        )
        .await;
        assert!(body.to_string().contains("does not exist"), "{body}");

        // The body is read before the key is looked up, but answered for after it.
        for key in [None, Some("key_00000000000000000000000000000000")] {
            let res = app
                .request_as(key, Method::POST, &path)
                .header("Content-Type", "application/json")
                .body("{not json")
                .send()
                .await
                .unwrap();
            assert_problem(res, 401).await;
        }
        let res = app
            .request_as(Some(&user.key), Method::POST, &path)
            .header("Content-Type", "application/json")
            .body("{not json")
            .send()
            .await
            .unwrap();
        assert_invalid(res, &["body"]).await;
        // No body, or one without args: no arguments (here a missing required one).
        let res = app
            .request_as(Some(&user.key), Method::POST, &path)
            .send()
            .await
            .unwrap();
        assert_invalid(res, &["args.card"]).await;
    })
    .await;
}

/// Sends `head` and the first `sent` bytes of `body` to `path` on a raw connection, then the rest
/// `rest_after` later (never, for `None`); returns the answer's status line.
async fn react_slowly(
    app: &TestApp,
    path: &str,
    key: &str,
    body: &str,
    sent: usize,
    rest_after: Option<std::time::Duration>,
) -> String {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let addr = app.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\nsvc-api-key: {key}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&body.as_bytes()[..sent]).await.unwrap();
    let (read, mut write) = stream.into_split();
    let rest = body.as_bytes()[sent..].to_vec();
    let writer = tokio::spawn(async move {
        if let Some(after) = rest_after {
            tokio::time::sleep(after).await;
            write.write_all(&rest).await.unwrap();
        }
        // Held open until the answer is read.
        std::future::pending::<()>().await;
        drop(write);
    });
    let mut status = String::new();
    tokio::io::BufReader::new(read)
        .read_line(&mut status)
        .await
        .unwrap();
    writer.abort();
    status
}

/// A body still arriving is read only once the caller is known: a key that is no key is a 401
/// at once (waiting for the body would have been a 408 after 30 s), and a good key's call reads
/// its token on its own once the body is there.
#[tokio::test]
async fn a_body_still_arriving_is_read_once_the_caller_is_known() {
    on_each_backend(async |app| {
        let r = reactor(app, ECHO, json!([p("card", "string", false)]), json!({})).await;
        let path = format!("/reactors/{}/react", r["id"].as_str().unwrap());
        let owner = full(app).await;
        let mine = owner
            .create(&json!({"type": "token", "data": "4242"}))
            .await;
        let body = json!({"args": {"card": format!("{{{{ {} }}}}", mine["id"].as_str().unwrap())}})
            .to_string();
        let unknown = "key_00000000000000000000000000000000";
        let status = react_slowly(app, &path, unknown, &body, 5, None).await;
        assert!(status.starts_with("HTTP/1.1 401"), "{status}");
        let user = with(
            app,
            &[],
            json!([rule(1, "/general/", "reveal", &["token:use"])]),
        )
        .await;
        let later = Some(std::time::Duration::from_millis(200));
        let status = react_slowly(app, &path, &user.key, &body, 5, later).await;
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    })
    .await;
}
