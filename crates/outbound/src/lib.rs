//! Outbound HTTP adapter: the domain's [`Forwarder`] port on `reqwest` (docs/decisions.md §8).
//!
//! Proxy requests go to third-party destinations through one pooled client (keep-alive, no
//! redirects followed, no system proxy, no retries). The destination policy is SSRF-safe:
//! https only unless `allow_http`, and loopback, private, CGNAT, link-local, unique-local,
//! multicast, broadcast, unspecified, documentation, benchmarking and reserved addresses are
//! refused unless `allowed_hosts` allows them, in every spelling the URL parser accepts and in
//! the IPv6 forms that embed an IPv4 address. A literal address is checked before sending; a
//! host name is checked at every connection, by the resolver hook, so a name that resolves (or
//! later re-resolves) to a refused address gets no connection.
//!
//! Header values and bodies carry detokenized data: nothing here logs them, and error messages
//! leave out the URL.

mod address;
mod error;
mod policy;
mod resolve;
mod response;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::{Client, Method, Url};
use tokenvault_domain::ports::forward::{
    ForwardError, Forwarder, OutboundRequest, OutboundResponse,
};

use policy::Policy;
use resolve::PolicyResolver;

/// Settings of the forwarder.
#[derive(Clone, Debug)]
pub struct OutboundSettings {
    /// Whether http (not only https) destinations are allowed.
    pub allow_http: bool,
    /// Host names, literal addresses and CIDRs that may be reached even though their addresses
    /// are of a refused range (`TOKENVAULT_PROXY_ALLOWED_HOSTS`, already split).
    pub allowed_hosts: Vec<String>,
    /// Total time for one exchange, connection and whole response included.
    pub timeout: Duration,
    /// Time to establish a connection.
    pub connect_timeout: Duration,
    /// Largest response body read.
    pub max_response_bytes: usize,
}

impl Default for OutboundSettings {
    fn default() -> Self {
        Self {
            allow_http: false,
            allowed_hosts: Vec::new(),
            timeout: Duration::from_secs(25),
            connect_timeout: Duration::from_secs(10),
            max_response_bytes: 10 * 1024 * 1024,
        }
    }
}

/// The [`Forwarder`]: one `reqwest` client whose resolver enforces the destination policy.
#[derive(Debug)]
pub struct HttpForwarder {
    client: Client,
    policy: Arc<Policy>,
    max_response_bytes: usize,
}

impl HttpForwarder {
    /// Builds the client.
    ///
    /// # Errors
    /// An `allowed_hosts` entry that does not parse (named), or a client that cannot be built.
    pub fn new(settings: OutboundSettings) -> Result<Self, String> {
        let policy = Arc::new(Policy::new(settings.allow_http, &settings.allowed_hosts)?);
        let client = Client::builder()
            .dns_resolver(PolicyResolver::new(Arc::clone(&policy)))
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .no_proxy()
            .retry(reqwest::retry::never())
            .timeout(settings.timeout)
            .connect_timeout(settings.connect_timeout)
            .build()
            .map_err(|err| {
                // reqwest's error says only "builder error"; the usual cause is a machine (or
                // container image) without the system's CA certificates, which rustls loads.
                format!(
                    "the outbound HTTP client cannot be built ({err}); are the CA certificates \
                     installed (/etc/ssl/certs/ca-certificates.crt)?"
                )
            })?;
        Ok(Self {
            client,
            policy,
            max_response_bytes: settings.max_response_bytes,
        })
    }

    fn parse_checked(&self, url: &str) -> Result<Url, String> {
        let parsed = Url::parse(url).map_err(|err| format!("the URL does not parse: {err}"))?;
        self.policy.check_url(&parsed)?;
        Ok(parsed)
    }

    fn build(&self, request: OutboundRequest, url: Url) -> Result<reqwest::Request, ForwardError> {
        let method = Method::from_bytes(request.method.as_bytes()).map_err(|_| {
            ForwardError::Unreachable(format!("the method {:?} is not valid", request.method))
        })?;
        let mut builder = self.client.request(method, url);
        for (name, value) in request.headers {
            if response::is_hop_by_hop(&name) || name.eq_ignore_ascii_case("host") {
                continue;
            }
            let header_name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| invalid_header(&name))?;
            let header_value = reqwest::header::HeaderValue::from_bytes(value.as_bytes())
                .map_err(|_| invalid_header(&name))?;
            builder = builder.header(header_name, header_value);
        }
        builder
            .body(request.body)
            .build()
            .map_err(|err| error::from_reqwest(&err))
    }
}

fn invalid_header(name: &str) -> ForwardError {
    // The name only: values carry detokenized data.
    ForwardError::Unreachable(format!("the request header {name:?} is not valid"))
}

#[async_trait]
impl Forwarder for HttpForwarder {
    fn check_destination(&self, url: &str) -> Result<(), String> {
        self.parse_checked(url).map(|_| ())
    }

    async fn forward(&self, request: OutboundRequest) -> Result<OutboundResponse, ForwardError> {
        let url = self
            .parse_checked(&request.url)
            .map_err(ForwardError::Refused)?;
        let outbound = self.build(request, url)?;
        let answer = self
            .client
            .execute(outbound)
            .await
            .map_err(|err| error::from_reqwest(&err))?;
        response::read(answer, self.max_response_bytes).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let settings = OutboundSettings::default();
        assert!(!settings.allow_http);
        assert!(settings.allowed_hosts.is_empty());
        assert_eq!(settings.timeout, Duration::from_secs(25));
        assert_eq!(settings.connect_timeout, Duration::from_secs(10));
        assert_eq!(settings.max_response_bytes, 10 * 1024 * 1024);
    }

    #[test]
    fn a_bad_allowed_host_is_named() {
        let settings = OutboundSettings {
            allowed_hosts: vec!["ok.example".into(), "not a host".into()],
            ..OutboundSettings::default()
        };
        let err = HttpForwarder::new(settings).expect_err("refused");
        assert!(err.contains("\"not a host\""), "{err}");
    }

    #[test]
    fn check_destination() {
        let forwarder = HttpForwarder::new(OutboundSettings::default()).expect("built");
        assert!(
            forwarder
                .check_destination("https://api.example.com/v1")
                .is_ok()
        );
        assert!(
            forwarder
                .check_destination("http://api.example.com/v1")
                .is_err()
        );
        assert!(forwarder.check_destination("not a url").is_err());
        assert!(forwarder.check_destination("https://127.0.0.1/").is_err());
        assert!(
            forwarder
                .check_destination("https://[::ffff:10.0.0.1]/")
                .is_err()
        );
        assert!(forwarder.check_destination("https://localhost/").is_ok());
    }

    #[tokio::test]
    async fn an_invalid_method_or_header_is_not_sent() {
        let settings = OutboundSettings {
            allow_http: true,
            ..OutboundSettings::default()
        };
        let forwarder = HttpForwarder::new(settings).expect("built");
        let request = |method: &str, header: (&str, &str)| OutboundRequest {
            method: method.into(),
            url: "https://api.example.com/".into(),
            headers: vec![(header.0.into(), header.1.into())],
            body: Vec::new(),
        };
        let err = forwarder
            .forward(request("GE T", ("x-a", "b")))
            .await
            .expect_err("invalid method");
        assert!(matches!(err, ForwardError::Unreachable(_)), "{err:?}");
        let err = forwarder
            .forward(request("GET", ("x a", "secret")))
            .await
            .expect_err("invalid name");
        assert!(matches!(&err, ForwardError::Unreachable(m) if !m.contains("secret")));
        let err = forwarder
            .forward(request("GET", ("x-a", "se\ncret")))
            .await
            .expect_err("invalid value");
        assert!(matches!(&err, ForwardError::Unreachable(m) if !m.contains("cret")));
    }
}
