//! The HTTP server: every route, the middleware around them, and what they share.

use std::net::TcpListener;

use actix_web::dev::Server;
use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer, web};
use tokenvault_domain::Vault;

use crate::cors::BrowserCors;
use crate::settings::{BodyLimit, HttpSettings};
use crate::{complete, console, metrics, openapi, ready, routes, trace};

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
    let with_console = settings.console;
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
            .configure(routes::token_search::configure)
            .configure(|cfg| routes::tokens::configure(cfg, &browser))
            .configure(routes::reactors::configure)
            .configure(routes::proxies::configure)
            .configure(|cfg| routes::sessions::configure(cfg, &browser))
            .configure(routes::logs::configure)
            .configure(routes::permissions::configure)
            .service(resource!("/openapi.json").route(web::get().to(openapi::openapi)))
            .service(resource!("/metrics").route(web::get().to(metrics::metrics)))
            .service(resource!("/ready").route(web::get().to(ready::ready)))
            .configure(|cfg| {
                if with_console {
                    console::configure(cfg);
                }
            })
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
