//! Proxies (docs/decisions.md §8): a static route to a destination, chosen by its key, that
//! detokenizes the request body and may transform the request and the response with code.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use time::OffsetDateTime;
use uuid::Uuid;

/// The longest `destination_url`.
pub const MAX_URL_LEN: usize = 400;
/// The most `configuration` entries.
pub const MAX_CONFIGURATION: usize = 25;
/// The longest configuration name or value (characters).
pub const MAX_CONFIGURATION_TEXT: usize = 4096;

/// The key that selects a proxy: 32 random base62 characters. A credential when the proxy does
/// not require an API key, so `Debug` never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyKey(String);

impl ProxyKey {
    /// Number of base62 characters.
    pub const LEN: usize = 32;

    /// Accepts a string of the key format; `None` for anything else.
    pub fn parse(value: &str) -> Option<Self> {
        (value.len() == Self::LEN && value.bytes().all(|b| b.is_ascii_alphanumeric()))
            .then(|| Self(value.to_string()))
    }

    /// The key itself (for the one place that stores or shows it).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ProxyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProxyKey(<redacted>)")
    }
}

/// A proxy (its key is kept apart: [`ProxyView`] shows it, storage holds it hashed and
/// encrypted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proxy {
    /// Identifier.
    pub id: Uuid,
    /// Owning tenant.
    pub tenant_id: Uuid,
    /// 1..=200 characters.
    pub name: String,
    /// Absolute http(s) URL, at most 400 characters.
    pub destination_url: String,
    /// Whether a caller needs an API key of the tenant holding `token:use`.
    pub require_auth: bool,
    /// Code run on the request after detokenization.
    pub request_transform: Option<String>,
    /// Code run on 2xx responses.
    pub response_transform: Option<String>,
    /// The application transforms' `svc` (and detokenization without auth) act as.
    pub application_id: Option<Uuid>,
    /// String values given to transform code.
    pub configuration: Option<BTreeMap<String, String>>,
    /// Creating application.
    pub created_by: Option<Uuid>,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last modifying application.
    pub modified_by: Option<Uuid>,
    /// Last change.
    pub modified_at: Option<OffsetDateTime>,
}

/// A proxy with its key, as responses show it.
#[derive(Clone, Debug)]
pub struct ProxyView {
    /// The proxy.
    pub proxy: Proxy,
    /// Its key.
    pub key: ProxyKey,
}

/// Whether `url` is an absolute http(s) URL with a host, of acceptable length. The destination
/// policy (which hosts and schemes) is the forwarder's.
pub fn check_url_shape(url: &str) -> Result<(), &'static str> {
    if url.len() > MAX_URL_LEN {
        return Err("must be at most 400 characters");
    }
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or("must be an absolute http or https URL")?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must be an absolute http or https URL");
    }
    Ok(())
}

/// Where a call goes: the destination without its trailing `/`, the tail, and the query left
/// after the proxy key was taken out.
pub fn destination_of(destination: &str, tail: &str, query: &[(String, String)]) -> String {
    // The tail goes into the path, before a query the destination already has.
    let destination = destination.split('#').next().unwrap_or(destination);
    let (base, own_query) = match destination.split_once('?') {
        Some((base, q)) => (base, Some(q)),
        None => (destination, None),
    };
    let mut url = base.trim_end_matches('/').to_string();
    let tail = tail.trim_start_matches('/');
    if !tail.is_empty() {
        url.push('/');
        url.push_str(tail);
    }
    if let Some(q) = own_query.filter(|q| !q.is_empty()) {
        url.push('?');
        url.push_str(q);
    }
    if !query.is_empty() {
        url.push(if url.contains('?') { '&' } else { '?' });
        let mut encoder = Vec::with_capacity(query.len());
        for (name, value) in query {
            encoder.push(format!("{}={}", encode(name), encode(value)));
        }
        url.push_str(&encoder.join("&"));
    }
    url
}

/// Percent-encodes a query component (unreserved characters kept).
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Headers never forwarded either way: hop-by-hop ones, and those the client of each hop sets.
const HOP_BY_HOP: [&str; 10] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
];

/// Whether a header of the caller's request may go to the destination: no `SVC-*` header
/// (API key, proxy key) and no hop-by-hop header.
pub fn forwardable(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    !name.starts_with("svc-") && !HOP_BY_HOP.contains(&name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_one_shape_and_never_print() {
        let key = ProxyKey::parse("AbCdEfGhIjKlMnOpQrStUvWxYz012345").expect("valid");
        assert_eq!(format!("{key:?}"), "ProxyKey(<redacted>)");
        assert!(ProxyKey::parse("short").is_none());
        assert!(ProxyKey::parse("AbCdEfGhIjKlMnOpQrStUvWxYz01234!").is_none());
    }

    #[test]
    fn urls_must_be_absolute_http() {
        assert!(check_url_shape("https://example.com/x").is_ok());
        assert!(check_url_shape("http://127.0.0.1:8080").is_ok());
        for bad in [
            "not a url",
            "ftp://127.0.0.1/file",
            "/relative/path",
            "https://",
            "https:///x",
            "https://a b",
        ] {
            assert!(check_url_shape(bad).is_err(), "{bad}");
        }
        assert!(check_url_shape(&format!("https://e.com/{}", "a".repeat(400))).is_err());
    }

    #[test]
    fn the_tail_and_query_are_appended() {
        let q = vec![
            ("a".to_string(), "1".to_string()),
            ("b".to_string(), "x y&".to_string()),
        ];
        assert_eq!(
            destination_of("https://d.com/base/", "/one/two", &q),
            "https://d.com/base/one/two?a=1&b=x%20y%26"
        );
        assert_eq!(
            destination_of("https://d.com/base", "", &[]),
            "https://d.com/base"
        );
        assert_eq!(
            destination_of("https://d.com/b?k=v", "", &q[..1]),
            "https://d.com/b?k=v&a=1"
        );
    }

    #[test]
    fn svc_and_hop_by_hop_headers_stay_behind() {
        for name in [
            "SVC-API-KEY",
            "svc-proxy-key",
            "Svc-Extra",
            "Connection",
            "Transfer-Encoding",
            "Host",
            "Content-Length",
        ] {
            assert!(!forwardable(name), "{name}");
        }
        for name in ["X-Custom", "Content-Type", "Authorization", "Accept"] {
            assert!(forwardable(name), "{name}");
        }
    }
}
