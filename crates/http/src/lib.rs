//! Inbound HTTP adapter (actix-web): routes, DTOs, extractors, problem+json errors, trace ids
//! and the OpenAPI document. It calls the domain's [`Vault`](tokenvault_domain::Vault) and nothing else.

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

mod app;
mod area_problem;
pub mod complete;
pub mod console;
mod cors;
pub mod dto;
pub mod extract;
pub mod idempotency;
pub mod json_body;
pub mod limit;
pub mod metrics;
pub mod openapi;
pub mod problem;
pub mod query;
pub mod ready;
mod replay;
pub mod routes;
mod settings;
pub mod svc;
pub mod tls;
pub mod trace;

pub use app::server;
pub use cors::BrowserCors;
pub use settings::{BodyLimit, HttpSettings};
