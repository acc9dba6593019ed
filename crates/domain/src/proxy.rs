//! Proxies (docs/decisions.md §8): a static route to a destination, chosen by its key, that
//! detokenizes the request body and may transform the request and the response with code.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use percent_encoding::percent_decode_str;
use time::OffsetDateTime;
use url::Url;
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
/// encrypted). Its `Debug` names the configuration's keys only: the values are the tenant's
/// secrets.
#[derive(Clone, PartialEq, Eq)]
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

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("id", &self.id)
            .field("tenant_id", &self.tenant_id)
            .field("name", &self.name)
            .field("destination_url", &self.destination_url)
            .field("require_auth", &self.require_auth)
            .field(
                "configuration",
                &self
                    .configuration
                    .as_ref()
                    .map(|c| c.keys().collect::<Vec<_>>()),
            )
            .field("application_id", &self.application_id)
            .finish_non_exhaustive()
    }
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

/// Why a tail is refused (a 400 naming `path`).
pub const TAIL_REFUSED: &str =
    "the path after /proxy may not contain . or .. segments, control characters, ?, # or \\";

/// How many times a tail is percent-decoded for the check, beyond what the router decoded: a
/// destination, or a gateway before it, may decode once or twice more.
const DECODINGS: usize = 3;

/// The path after `/proxy`, as the segments that go below the destination's path, each
/// percent-decoded (docs/decisions.md §8). It never climbs, however a destination reads it:
/// [`ProxyTail::parse`] refuses a tail that any of the readings of `names_a_dot_segment`
/// turns into a `.` or `..` segment, or that holds a control character, `?`, `#` or `\`. An
/// encoded slash inside a segment goes out encoded, never as a separator.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxyTail(Vec<String>);

impl ProxyTail {
    /// The tail as the router matched it (`/proxy/{tail}`; leading `/`s dropped): its `/` are
    /// separators, and what remains percent-encoded is decoded here.
    pub fn parse(raw: &str) -> Result<Self, &'static str> {
        let raw = raw.trim_start_matches('/');
        if raw.is_empty() {
            return Ok(Self::default());
        }
        let mut text = raw.to_owned();
        for _ in 0..=DECODINGS {
            if names_a_dot_segment(&text) {
                return Err(TAIL_REFUSED);
            }
            let decoded = percent_decode_str(&text).decode_utf8_lossy().into_owned();
            if decoded == text {
                break;
            }
            text = decoded;
        }
        Ok(Self(
            raw.split('/')
                .map(|segment| percent_decode_str(segment).decode_utf8_lossy().into_owned())
                .collect(),
        ))
    }
}

/// Whether `text` (a tail at one stage of decoding) is refused as it reads at that stage: it
/// holds `?`, `#`, `\` or a control character, or one of its `/`-separated segments is `.` or
/// `..` once its `;` parameters are cut off (Tomcat, Jetty and Spring drop them before they
/// resolve dots: `..;x=1`) and its spaces dropped (a URL parser drops tab, CR and LF, so
/// `.%09.` would become `..` on the way out).
fn names_a_dot_segment(text: &str) -> bool {
    text.contains(['?', '#', '\\'])
        || text.chars().any(char::is_control)
        || text.split('/').any(|segment| {
            let name: String = segment
                .split(';')
                .next()
                .unwrap_or_default()
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            name == "." || name == ".."
        })
}

/// Where a call goes: the destination without its fragment and trailing `/`, the tail's
/// segments below its path (each percent-encoded as one segment: never a separator, never a
/// dot segment), then the destination's own query and the query left after the proxy key was
/// taken out. The result is checked to be on the destination's origin (scheme, host, port)
/// and below its path; anything else is refused (`Err`, a 400 naming `path`).
pub fn destination_of(
    destination: &str,
    tail: &ProxyTail,
    query: &[(String, String)],
) -> Result<String, &'static str> {
    let mut base = Url::parse(destination).map_err(|_| "the destination URL does not parse")?;
    base.set_fragment(None);
    let own_query = base.query().filter(|q| !q.is_empty()).map(str::to_string);
    base.set_query(None);
    let base_path = base.path().trim_end_matches('/').to_string();
    base.set_path(&base_path);
    let mut url = base.clone();
    if !tail.0.is_empty() {
        url.path_segments_mut()
            .map_err(|()| "the destination URL cannot take a path")?
            .pop_if_empty()
            .extend(&tail.0);
    }
    let mut full_query = own_query;
    if !query.is_empty() {
        let added = query
            .iter()
            .map(|(name, value)| format!("{}={}", encode(name), encode(value)))
            .collect::<Vec<_>>()
            .join("&");
        full_query = Some(match full_query {
            Some(own) => format!("{own}&{added}"),
            None => added,
        });
    }
    url.set_query(full_query.as_deref());
    let path = url.path();
    let below = path == base_path
        || path
            .strip_prefix(base_path.as_str())
            .is_some_and(|rest| rest.starts_with('/'));
    if url.origin() != base.origin() || !below {
        return Err(TAIL_REFUSED);
    }
    Ok(url.into())
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

    fn to(destination: &str, tail: &str, query: &[(String, String)]) -> String {
        destination_of(destination, &ProxyTail::parse(tail).expect(tail), query).expect(tail)
    }

    #[test]
    fn the_tail_and_query_are_appended() {
        let q = vec![
            ("a".to_string(), "1".to_string()),
            ("b".to_string(), "x y&".to_string()),
        ];
        assert_eq!(
            to("https://d.com/base/", "/one/two", &q),
            "https://d.com/base/one/two?a=1&b=x%20y%26"
        );
        assert_eq!(to("https://d.com/base", "", &[]), "https://d.com/base");
        assert_eq!(
            to("https://d.com/b?k=v#frag", "", &q[..1]),
            "https://d.com/b?k=v&a=1"
        );
        assert_eq!(
            to("https://d.com/b?k=v", "c/", &[]),
            "https://d.com/b/c/?k=v"
        );
        assert_eq!(to("https://d.com", "x", &[]), "https://d.com/x");
        assert_eq!(to("https://d.com//", "x", &[]), "https://d.com/x");
        assert_eq!(
            to("https://d.com:8443/a//", "x//y", &[]),
            "https://d.com:8443/a/x//y"
        );
    }

    #[test]
    fn the_tail_never_climbs_however_spelled() {
        // As the router hands it over: most escapes decoded, `%25`, `%2F` and `%2B` not.
        for tail in [
            "..",
            ".",
            "a/../b",
            "./a",
            ".\t./.\t./admin",
            ".\r./",
            ".\n./admin",
            "\t../admin",
            ".\0./x",
            ".\u{7f}./x",
            "a\u{85}b",
            "a\tb",
            "..%2Fadmin",
            "..%2fadmin",
            "a%2F..%2F..%2Fadmin",
            ".%2F.%2E%2Fadmin",
            "%2e%2e/admin",
            "%2E./admin",
            "%2E%09./admin",
            "..\\admin",
            "..%5Cadmin",
            "a?b",
            "a#b",
            "a%3Fb",
            "a%23b",
            // Attack review of 3948bc8: `;` parameters cut off before dots are resolved.
            "..;/admin",
            "%2e%2e;/admin",
            "..%3B/admin",
            "..%3bjsessionid=1/admin",
            "a/..;x=1",
            // Decoded again by a gateway or the destination.
            "%252e%252e",
            "%252e%252e%253b/admin",
            ". ./admin",
        ] {
            assert_eq!(ProxyTail::parse(tail), Err(TAIL_REFUSED), "{tail:?}");
        }
        let base = "https://d.com/api/v1/tenant-a";
        for (tail, expected) in [
            ("ok/path", "https://d.com/api/v1/tenant-a/ok/path"),
            ("a%2Fb", "https://d.com/api/v1/tenant-a/a%2Fb"),
            ("..a/b..", "https://d.com/api/v1/tenant-a/..a/b.."),
            ("a b/", "https://d.com/api/v1/tenant-a/a%20b/"),
            ("a%2Bb+c", "https://d.com/api/v1/tenant-a/a+b+c"),
            ("%", "https://d.com/api/v1/tenant-a/%25"),
            ("a;b/..a;", "https://d.com/api/v1/tenant-a/a;b/..a;"),
        ] {
            assert_eq!(to(base, tail, &[]), expected, "{tail:?}");
        }
    }

    /// A destination's reading of an outgoing path: decoded `decodings` times, `;`
    /// parameters cut off or not, spaces and control characters dropped or not; its segments.
    fn read_as(path: &str, decodings: usize, cut_params: bool, drop_spaces: bool) -> Vec<String> {
        let mut text = path.to_owned();
        for _ in 0..decodings {
            text = percent_decode_str(&text).decode_utf8_lossy().into_owned();
        }
        text.split(['/', '\\'])
            .map(|segment| {
                let segment = if cut_params {
                    segment.split(';').next().unwrap_or_default()
                } else {
                    segment
                };
                segment
                    .chars()
                    .filter(|c| !(drop_spaces && (c.is_whitespace() || c.is_control())))
                    .collect()
            })
            .collect()
    }

    proptest::proptest! {
        /// Any tail made of the pieces attacks are spelled with: once accepted, no reading of
        /// the outgoing path by a destination finds a dot segment in it.
        #[test]
        fn no_destination_reads_an_accepted_tail_as_climbing(
            pieces in proptest::collection::vec(proptest::sample::select(vec![
                "a", "b", ".", "..", "%2e", "%2E", "%252e", ";", "%3b", "%3B", ";x=1", "%09",
                "\t", " ", "%20", "/", "%2F", "%2f", "%5c", "\\", "%00", "%",
            ]), 0..8)
        ) {
            let raw: String = pieces.concat();
            if let Ok(tail) = ProxyTail::parse(&raw) {
                let base = "https://d.com/base";
                let url = destination_of(base, &tail, &[]).expect("an accepted tail goes out");
                let path = url.strip_prefix(base).expect("below the destination");
                for decodings in 0..=DECODINGS {
                    for cut_params in [false, true] {
                        for drop_spaces in [false, true] {
                            let read = read_as(path, decodings, cut_params, drop_spaces);
                            proptest::prop_assert!(
                                !read.iter().any(|s| s == "." || s == ".."),
                                "{raw:?} went out as {path:?}, read as {read:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn segments_built_past_the_checks_are_still_refused_below_nowhere() {
        // A tail made without `parse` (no caller does) cannot leave the destination either:
        // the URL API drops a bare dot segment, and the final check refuses what climbs.
        let climbing = ProxyTail(vec![".\t.".into(), ".\t.".into(), "admin".into()]);
        assert_eq!(
            destination_of("https://d.com/api/v1", &climbing, &[]),
            Err(TAIL_REFUSED)
        );
        let dots = ProxyTail(vec!["..".into(), "x".into()]);
        assert_eq!(
            destination_of("https://d.com/api", &dots, &[]).as_deref(),
            Ok("https://d.com/api/x")
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
