//! CORS, for the routes browsers call only.

use actix_web::http::Method;
use actix_web::middleware::Condition;

/// CORS for browser callers (token creation with public keys, sessions), answered by the
/// routes browsers call only: `POST /tokens`, `POST /tokenize` and `POST /sessions` wrap
/// themselves in [`BrowserCors::middleware`] where they are registered, so the decision is the
/// route the router matched, however the path was spelled; every other route has no CORS
/// middleware and never answers a preflight nor sends `Access-Control-Allow-Origin`.
#[derive(Clone, Debug, Default)]
pub struct BrowserCors {
    origins: Vec<String>,
}

impl BrowserCors {
    /// The configured origins (`*` for any; none: CORS off).
    pub fn new(origins: &[String]) -> Self {
        Self {
            origins: origins.to_vec(),
        }
    }

    /// The middleware of one route browsers call (off without origins).
    pub fn middleware(&self) -> Condition<actix_cors::Cors> {
        Condition::new(!self.origins.is_empty(), cors(&self.origins))
    }
}

/// The configured origins, `POST` (and its preflight), the headers a client sends
/// (`SVC-API-KEY`, `Content-Type`, `SVC-TRACE-ID`, `SVC-IDEMPOTENCY-KEY`) and `SVC-TRACE-ID`
/// readable. Keys travel in a header, never in a cookie, so no credentials mode. A request
/// from another origin, or with another method (`GET /tokens`), gets no
/// `Access-Control-Allow-Origin` (the browser then withholds the answer); callers without
/// `Origin` are not affected.
fn cors(origins: &[String]) -> actix_cors::Cors {
    let any = origins.iter().any(|o| o == "*");
    let listed: Vec<String> = origins.to_vec();
    actix_cors::Cors::default()
        .allowed_origin_fn(move |origin, head| {
            matches!(head.method, Method::POST | Method::OPTIONS)
                && (any
                    || origin
                        .to_str()
                        .is_ok_and(|o| listed.iter().any(|l| l.eq_ignore_ascii_case(o))))
        })
        .allowed_methods(["POST"])
        .allowed_headers([
            "content-type",
            "svc-api-key",
            "svc-trace-id",
            "svc-idempotency-key",
        ])
        .expose_headers(["svc-trace-id", "retry-after"])
        .block_on_origin_mismatch(false)
        .max_age(600)
}
