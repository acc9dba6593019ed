//! The outbound HTTP port (docs/decisions.md §8): a proxy's request, after detokenization and
//! its transform, goes to the destination through a [`Forwarder`]. The adapter
//! (`tokenvault-outbound`) owns connections, timeouts, body bounds and the destination policy
//! (https only, no loopback/private/link-local addresses unless allowed).

use async_trait::async_trait;

/// Headers that concern one connection only, never passed on (RFC 9110 §7.6.1), and
/// `content-length`, which the outbound client sets itself.
pub const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
];

/// Whether a header is one of [`HOP_BY_HOP`].
pub fn is_hop_by_hop(name: &str) -> bool {
    HOP_BY_HOP.iter().any(|h| h.eq_ignore_ascii_case(name))
}

/// A request to a proxy's destination. Headers are already filtered (no `SVC-*`, no
/// hop-by-hop, no `Host`/`Content-Length`: the adapter sets those).
#[derive(Clone)]
pub struct OutboundRequest {
    /// HTTP method, upper case.
    pub method: String,
    /// Absolute http(s) URL: the destination, the tail and the query.
    pub url: String,
    /// Header names and values, in order (a name may repeat).
    pub headers: Vec<(String, String)>,
    /// The body (may be empty).
    pub body: Vec<u8>,
}

impl std::fmt::Debug for OutboundRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The body and headers carry detokenized data: never printed.
        f.debug_struct("OutboundRequest")
            .field("method", &self.method)
            .field("body_len", &self.body.len())
            .finish_non_exhaustive()
    }
}

/// What the destination answered.
#[derive(Clone)]
pub struct OutboundResponse {
    /// Status code.
    pub status: u16,
    /// Header names (lower case) and values, in order, hop-by-hop headers removed.
    pub headers: Vec<(String, String)>,
    /// The whole body.
    pub body: Vec<u8>,
}

impl std::fmt::Debug for OutboundResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboundResponse")
            .field("status", &self.status)
            .field("body_len", &self.body.len())
            .finish_non_exhaustive()
    }
}

/// Why a request did not get an answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ForwardError {
    /// The destination policy refuses it (scheme, or an address it resolves to); nothing was
    /// sent (403).
    #[error("the destination is not allowed: {0}")]
    Refused(String),
    /// No answer within the timeout (504).
    #[error("the destination did not answer in time")]
    Timeout,
    /// Could not connect, or the exchange failed, or the answer was too large (502).
    #[error("the destination could not be reached: {0}")]
    Unreachable(String),
}

/// Sends requests to proxy destinations.
///
/// # Errors
/// `forward`: a [`ForwardError`]. `check_destination`: why a URL can never be allowed.
#[async_trait]
pub trait Forwarder: Send + Sync {
    /// What can be decided from the URL alone, at proxy create/update: a scheme the policy
    /// refuses, or a host that is a literal address the policy refuses. Host names are checked
    /// only when resolved, at every connection.
    fn check_destination(&self, url: &str) -> Result<(), String>;

    /// Sends the request and reads the whole answer (redirects are not followed).
    async fn forward(&self, request: OutboundRequest) -> Result<OutboundResponse, ForwardError>;
}
