//! SSRF refusals end to end: every spelling of a loopback address, and a name that resolves to
//! one, is `Refused` with no connection to the destination listening on 127.0.0.1. Addresses
//! off this machine (10.0.0.1, 169.254.169.254) are checked with `check_destination` only, so
//! that a regression could never send a packet to them.

#[path = "../../../tests/destination.rs"]
mod destination;

use std::time::Duration;

use destination::{Destination, Reply};
use tokenvault_domain::ports::forward::{ForwardError, Forwarder, OutboundRequest};
use tokenvault_outbound::{HttpForwarder, OutboundSettings};

fn forwarder(allowed_hosts: &[&str]) -> HttpForwarder {
    HttpForwarder::new(OutboundSettings {
        allow_http: true,
        allowed_hosts: allowed_hosts.iter().map(|h| (*h).to_owned()).collect(),
        timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(2),
        ..OutboundSettings::default()
    })
    .expect("a forwarder")
}

async fn assert_refused(forwarder: &HttpForwarder, destination: &Destination, url: &str) {
    let err = forwarder
        .forward(OutboundRequest {
            method: "POST".into(),
            url: url.to_owned(),
            headers: vec![("authorization".into(), "Bearer secret".into())],
            body: b"4111111111111111".to_vec(),
        })
        .await
        .expect_err(url);
    assert!(matches!(err, ForwardError::Refused(_)), "{url}: {err:?}");
    destination.assert_no_connection(url).await;
}

#[tokio::test]
async fn every_spelling_of_a_loopback_address_is_refused_without_a_connection() {
    let destination = Destination::replying(Reply::with("200 OK", &[], b"leaked")).await;
    let port = destination.port();
    let forwarder = forwarder(&[]);
    for host in [
        "127.0.0.1",
        "2130706433",
        "0x7f000001",
        "0177.0.0.1",
        "127.1",
        "127.0.0.1.",
        "0.0.0.0",
        "0",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "[::127.0.0.1]",
        "[64:ff9b::7f00:1]",
        "[2002:7f00:1::]",
    ] {
        let url = format!("http://{host}:{port}/internal");
        let why = forwarder.check_destination(&url).expect_err(&url);
        assert!(!why.is_empty());
        assert_refused(&forwarder, &destination, &url).await;
    }
}

#[tokio::test]
async fn an_allowed_address_allows_that_address_only() {
    let destination = Destination::replying(Reply::with("200 OK", &[], b"ok")).await;
    let port = destination.port();
    let forwarder = forwarder(&["127.0.0.1"]);
    for url in [
        format!("http://127.0.0.2:{port}/"),
        format!("http://[::1]:{port}/"),
    ] {
        assert!(forwarder.check_destination(&url).is_err(), "{url}");
        assert_refused(&forwarder, &destination, &url).await;
    }
}

#[tokio::test]
async fn a_name_resolving_to_a_refused_address_is_refused_at_connection() {
    let destination = Destination::replying(Reply::with("200 OK", &[], b"leaked")).await;
    let port = destination.port();
    // An address entry matches that literal host only, not what a name resolves to.
    let forwarder = forwarder(&["127.0.0.1"]);
    let url = format!("http://localhost:{port}/");
    assert!(
        forwarder.check_destination(&url).is_ok(),
        "names are checked when resolved"
    );
    let err = forwarder
        .forward(OutboundRequest {
            method: "GET".into(),
            url: url.clone(),
            headers: Vec::new(),
            body: Vec::new(),
        })
        .await
        .expect_err("refused");
    let ForwardError::Refused(why) = err else {
        panic!("{err:?}");
    };
    assert!(
        why.contains("localhost is not an allowed destination"),
        "{why}"
    );
    // Never what the name resolves to, nor why that address is refused.
    for told in ["127.0.0.1", "::1", "loopback"] {
        assert!(!why.contains(told), "{why}");
    }
    destination.assert_no_connection(&url).await;
}

#[test]
fn off_machine_internal_addresses_are_refused_from_the_url() {
    let forwarder = forwarder(&[]);
    for url in [
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
        "http://[fd00:ec2::254]/",
        "http://100.100.100.200/",
        "http://192.168.1.1/",
        "http://172.16.0.1/",
        "http://[fe80::1]/",
        "http://224.0.0.1/",
        "http://255.255.255.255/",
    ] {
        assert!(forwarder.check_destination(url).is_err(), "{url}");
    }
    assert!(
        forwarder
            .check_destination("https://api.example.com/")
            .is_ok()
    );
}

#[tokio::test]
async fn refusals_do_not_echo_the_url_query_or_secrets() {
    let destination = Destination::replying(Reply::with("200 OK", &[], b"ok")).await;
    let forwarder = forwarder(&[]);
    let url = format!(
        "http://127.0.0.1:{}/?card=4111111111111111",
        destination.port()
    );
    let err = forwarder
        .forward(OutboundRequest {
            method: "GET".into(),
            url,
            headers: vec![("authorization".into(), "Bearer secret".into())],
            body: Vec::new(),
        })
        .await
        .expect_err("refused");
    let text = err.to_string();
    assert!(!text.contains("4111") && !text.contains("secret"), "{text}");
}
