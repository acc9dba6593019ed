//! The forwarder against a real destination on 127.0.0.1: what is sent and received, pooled
//! connections, redirects not followed, the response bound, timeouts and unreachable ports,
//! and what the allow-list lets through.

#[path = "../../../tests/destination.rs"]
mod destination;

use std::time::{Duration, Instant};

use destination::{Destination, Reply};
use tokenvault_domain::ports::forward::{
    ForwardError, Forwarder, OutboundRequest, OutboundResponse,
};
use tokenvault_outbound::{HttpForwarder, OutboundSettings};

fn forwarder(allowed_hosts: &[&str]) -> HttpForwarder {
    forwarder_with(allowed_hosts, |_| {})
}

fn forwarder_with(
    allowed_hosts: &[&str],
    tune: impl FnOnce(&mut OutboundSettings),
) -> HttpForwarder {
    let mut settings = OutboundSettings {
        allow_http: true,
        allowed_hosts: allowed_hosts.iter().map(|h| (*h).to_owned()).collect(),
        timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(2),
        ..OutboundSettings::default()
    };
    tune(&mut settings);
    HttpForwarder::new(settings).expect("a forwarder")
}

fn get(url: String) -> OutboundRequest {
    OutboundRequest {
        method: "GET".into(),
        url,
        headers: Vec::new(),
        body: Vec::new(),
    }
}

fn ok_reply() -> Reply {
    Reply::with("200 OK", &[("Content-Type", "text/plain")], b"ok")
}

fn header<'a>(response: &'a OutboundResponse, name: &str) -> Option<&'a str> {
    response
        .headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn forwards_method_path_query_headers_and_body() {
    let destination = Destination::replying(Reply::with(
        "201 Created",
        &[
            ("Content-Type", "application/json"),
            ("X-Reply", "yes"),
            ("Keep-Alive", "timeout=5"),
            ("Connection", "keep-alive"),
        ],
        br#"{"id":7}"#,
    ))
    .await;
    let forwarder = forwarder(&["127.0.0.1"]);
    let response = forwarder
        .forward(OutboundRequest {
            method: "PUT".into(),
            url: format!(
                "http://127.0.0.1:{}/v1/items/7?a=1&b=two%20words",
                destination.port()
            ),
            headers: vec![
                ("x-api-key".into(), "k-123".into()),
                ("content-type".into(), "application/json".into()),
                ("x-multi".into(), "one".into()),
                ("x-multi".into(), "two".into()),
            ],
            body: br#"{"card":"4111111111111111"}"#.to_vec(),
        })
        .await
        .expect("forwarded");

    assert_eq!(response.status, 201);
    assert_eq!(response.body, br#"{"id":7}"#);
    assert_eq!(header(&response, "content-type"), Some("application/json"));
    assert_eq!(header(&response, "x-reply"), Some("yes"));
    for hop in ["connection", "keep-alive", "content-length"] {
        assert_eq!(header(&response, hop), None, "{hop} is removed");
    }

    let requests = destination.requests();
    assert_eq!(requests.len(), 1);
    let raw = String::from_utf8(requests[0].clone()).expect("text");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head");
    assert!(
        head.starts_with("PUT /v1/items/7?a=1&b=two%20words HTTP/1.1\r\n"),
        "{head}"
    );
    let lines: Vec<String> = head.lines().map(str::to_ascii_lowercase).collect();
    let has = |line: &str| lines.iter().any(|l| l == line);
    assert!(has("x-api-key: k-123"), "{head}");
    assert!(has("content-type: application/json"), "{head}");
    assert!(has("x-multi: one") && has("x-multi: two"), "{head}");
    assert!(
        has(&format!("host: 127.0.0.1:{}", destination.port())),
        "{head}"
    );
    assert_eq!(body, r#"{"card":"4111111111111111"}"#);
}

#[tokio::test]
async fn connections_are_kept_alive_and_reused() {
    let destination = Destination::replying(ok_reply()).await;
    let forwarder = forwarder(&["127.0.0.1"]);
    for _ in 0..3 {
        let url = format!("http://127.0.0.1:{}/", destination.port());
        let response = forwarder.forward(get(url)).await.expect("forwarded");
        assert_eq!(response.body, b"ok");
    }
    assert_eq!(destination.requests().len(), 3);
    assert_eq!(destination.connections(), 1);
}

#[tokio::test]
async fn a_redirect_comes_back_as_is() {
    let destination =
        Destination::replying(Reply::with("302 Found", &[("Location", "/elsewhere")], b"")).await;
    let forwarder = forwarder(&["127.0.0.1"]);
    let url = format!("http://127.0.0.1:{}/start", destination.port());
    let response = forwarder.forward(get(url)).await.expect("forwarded");
    assert_eq!(response.status, 302);
    assert_eq!(header(&response, "location"), Some("/elsewhere"));
    assert_eq!(destination.requests().len(), 1, "not followed");
}

#[tokio::test]
async fn a_response_larger_than_the_bound_is_unreachable() {
    let limit = |s: &mut OutboundSettings| s.max_response_bytes = 16;

    // Announced by Content-Length.
    let destination = Destination::replying(Reply::with("200 OK", &[], &[b'x'; 17])).await;
    let url = format!("http://127.0.0.1:{}/", destination.port());
    let err = forwarder_with(&["127.0.0.1"], limit)
        .forward(get(url))
        .await
        .expect_err("too large");
    assert_eq!(
        err,
        ForwardError::Unreachable("the response is larger than 16 bytes".into())
    );

    // Chunked, no length announced: counted while read.
    let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
        a\r\n0123456789\r\na\r\n0123456789\r\n0\r\n\r\n";
    let destination = Destination::replying(Reply::Raw(chunked.to_vec())).await;
    let url = format!("http://127.0.0.1:{}/", destination.port());
    let err = forwarder_with(&["127.0.0.1"], limit)
        .forward(get(url))
        .await
        .expect_err("too large");
    assert_eq!(
        err,
        ForwardError::Unreachable("the response is larger than 16 bytes".into())
    );

    // Exactly the bound is fine.
    let destination = Destination::replying(Reply::with("200 OK", &[], &[b'y'; 16])).await;
    let url = format!("http://127.0.0.1:{}/", destination.port());
    let response = forwarder_with(&["127.0.0.1"], limit)
        .forward(get(url))
        .await
        .expect("at the bound");
    assert_eq!(response.body.len(), 16);
}

#[tokio::test]
async fn a_destination_that_never_answers_times_out() {
    let destination = Destination::replying(Reply::Never).await;
    let forwarder = forwarder_with(&["127.0.0.1"], |s| s.timeout = Duration::from_millis(300));
    let url = format!("http://127.0.0.1:{}/slow", destination.port());
    let started = Instant::now();
    let err = forwarder.forward(get(url)).await.expect_err("no answer");
    assert_eq!(err, ForwardError::Timeout);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(destination.connections(), 1);
}

#[tokio::test]
async fn a_closed_port_is_unreachable() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("address").port()
    };
    let url = format!("http://127.0.0.1:{port}/");
    let err = forwarder(&["127.0.0.1"])
        .forward(get(url))
        .await
        .expect_err("closed");
    assert!(
        matches!(&err, ForwardError::Unreachable(why) if why.starts_with("could not connect")),
        "{err:?}"
    );
}

#[tokio::test]
async fn http_is_refused_unless_allowed() {
    let destination = Destination::replying(ok_reply()).await;
    let forwarder = forwarder_with(&["127.0.0.1"], |s| s.allow_http = false);
    let url = format!("http://127.0.0.1:{}/", destination.port());
    assert!(forwarder.check_destination(&url).is_err());
    let err = forwarder.forward(get(url)).await.expect_err("http");
    assert!(matches!(err, ForwardError::Refused(_)), "{err:?}");
    destination.assert_no_connection("http").await;
}

#[tokio::test]
async fn a_cidr_entry_allows_a_name_that_resolves_within_it() {
    let destination = Destination::replying(ok_reply()).await;
    let forwarder = forwarder(&["127.0.0.0/8"]);
    let url = format!("http://localhost:{}/", destination.port());
    let response = forwarder.forward(get(url)).await.expect("allowed");
    assert_eq!(response.status, 200);
    assert_eq!(destination.connections(), 1);
}

#[tokio::test]
async fn a_name_entry_allows_what_the_name_resolves_to() {
    let destination = Destination::replying(ok_reply()).await;
    let forwarder = forwarder(&["LOCALHOST"]);
    let url = format!("http://localhost:{}/", destination.port());
    let response = forwarder.forward(get(url)).await.expect("allowed");
    assert_eq!(response.body, b"ok");
}
