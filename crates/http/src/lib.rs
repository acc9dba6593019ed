//! Inbound HTTP adapter (actix-web): routes, DTOs, extractors, problem+json errors, trace ids
//! and the OpenAPI document. It calls the domain's [`Vault`] and nothing else.

/// `web::resource(path)` carrying its route template for the metrics' label
/// ([`metrics::RouteLabel`]), so a request is not matched a second time to name its route:
/// `resource!("/tokens", "/{id}")` inside `web::scope("/tokens")`, `resource!("/logs")` at the
/// top. Each resource is wrapped by the `SVC-IDEMPOTENCY-KEY` middleware
/// ([`idempotency::idempotent`]), which therefore runs once the router matched the route and
/// sees the resource's own data: a route registered with [`idempotency::NeverReplayed`] is
/// never stored nor replayed, however its path was spelled.
macro_rules! resource {
    ($path:literal) => {
        actix_web::web::resource($path)
            .app_data($crate::metrics::RouteLabel($path))
            .wrap(actix_web::middleware::from_fn(
                $crate::idempotency::idempotent,
            ))
    };
    ($scope:literal, $path:literal) => {
        actix_web::web::resource($path)
            .app_data($crate::metrics::RouteLabel(concat!($scope, $path)))
            .wrap(actix_web::middleware::from_fn(
                $crate::idempotency::idempotent,
            ))
    };
}

pub mod complete;
pub mod dto;
pub mod extract;
pub mod idempotency;
pub mod limit;
pub mod metrics;
pub mod openapi;
pub mod problem;
pub mod ready;
pub mod routes;
pub mod svc;
pub mod tls;
pub mod trace;

use std::net::TcpListener;

use actix_web::dev::Server;
use actix_web::http::Method;
use actix_web::middleware::{Condition, from_fn};
use actix_web::{App, HttpServer, web};
use tokenvault_domain::Vault;

/// The largest request body in bytes, for routes that read their body themselves.
#[derive(Clone, Copy, Debug)]
pub struct BodyLimit(pub usize);

/// Settings of the HTTP server.
#[derive(Clone, Debug)]
pub struct HttpSettings {
    /// Largest request body in bytes (413 beyond).
    pub body_limit: usize,
    /// Worker threads (`None`: one per core).
    pub workers: Option<usize>,
    /// Seconds in-flight requests get to finish on shutdown.
    pub shutdown_timeout_secs: u64,
    /// Monthly active tokens included in the plan (usage report).
    pub included_monthly_active_tokens: u64,
    /// Origins browsers may call `POST /tokens`, `POST /tokenize` and `POST /sessions` from
    /// (`https://shop.example`), or `*` for any (the caller's origin is echoed); empty: no
    /// CORS headers. No other route answers CORS ([`BrowserCors`]).
    pub cors_origins: Vec<String>,
    /// Requests a second per application, bursts of twice that (off by default); shared with
    /// `req.svc` ([`svc::HttpSvcFactory`]), whose calls count too.
    pub rate_limit: std::sync::Arc<limit::RateLimit>,
    /// What `GET /metrics` shows (shared with the code-runner decorator of the server).
    pub metrics: std::sync::Arc<metrics::Metrics>,
    /// The changes running as their own task (`complete.rs`), bounded; the server's shutdown
    /// waits for them ([`complete::Detached::drain`]).
    pub detached: std::sync::Arc<complete::Detached>,
    /// What `GET /ready` checks (the server wires in the database and the code workers).
    pub ready: ready::ReadyChecks,
    /// TLS, when the server terminates it itself ([`tls::server_config`]); plain HTTP else.
    pub tls: Option<rustls::ServerConfig>,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            body_limit: 1024 * 1024,
            workers: None,
            shutdown_timeout_secs: 30,
            included_monthly_active_tokens: 1000,
            cors_origins: Vec::new(),
            rate_limit: std::sync::Arc::new(limit::RateLimit::new(0)),
            metrics: std::sync::Arc::default(),
            detached: std::sync::Arc::default(),
            ready: ready::ReadyChecks::default(),
            tls: None,
        }
    }
}

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

/// Builds the server on `listener`. It does not handle signals: the caller stops it through
/// its handle (graceful: in-flight requests finish), after draining `settings.detached`
/// (changes whose client left hold no connection, which is all graceful stop waits for).
pub fn server(
    listener: TcpListener,
    vault: Vault,
    settings: &HttpSettings,
) -> std::io::Result<Server> {
    let vault = web::Data::new(vault);
    let metrics = web::Data::from(settings.metrics.clone());
    let detached = web::Data::from(settings.detached.clone());
    let limit = web::Data::from(settings.rate_limit.clone());
    let ready = web::Data::new(settings.ready.clone());
    let browser = BrowserCors::new(&settings.cors_origins);
    let body_limit = settings.body_limit;
    let included = web::Data::new(routes::tenants::IncludedTokens(
        settings.included_monthly_active_tokens,
    ));
    let mut http = HttpServer::new(move || {
        App::new()
            .app_data(vault.clone())
            .app_data(included.clone())
            .app_data(metrics.clone())
            .app_data(detached.clone())
            .app_data(limit.clone())
            .app_data(ready.clone())
            .app_data(web::PayloadConfig::new(body_limit))
            .app_data(web::Data::new(BodyLimit(body_limit)))
            .wrap(from_fn(complete::run_to_completion))
            .wrap(from_fn(trace::trace_requests))
            .configure(routes::meta::configure)
            .configure(routes::applications::configure)
            .configure(routes::tenants::configure)
            .configure(|cfg| routes::tokens::configure(cfg, &browser))
            .configure(routes::reactors::configure)
            .configure(routes::proxies::configure)
            .configure(|cfg| routes::sessions::configure(cfg, &browser))
            .configure(routes::logs::configure)
            .service(resource!("/metrics").route(web::get().to(metrics::metrics)))
            .service(resource!("/ready").route(web::get().to(ready::ready)))
            .default_service(web::to(routes::meta::not_found))
    })
    .disable_signals()
    .shutdown_timeout(settings.shutdown_timeout_secs);
    http = match &settings.tls {
        Some(tls) => http.listen_rustls_0_23(listener, tls.clone())?,
        None => http.listen(listener)?,
    };
    if let Some(workers) = settings.workers {
        http = http.workers(workers);
    }
    Ok(http.run())
}
