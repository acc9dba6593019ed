//! Request middleware: the `SVC-TRACE-ID` (echoed or generated) on the response and on every log
//! line of the request, and problem+json for every error response actix makes on its own
//! (unknown route, 405, oversized body).

use std::time::Instant;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use tracing::Instrument;

use crate::metrics::{Metrics, route_label};
use crate::problem::{PROBLEM_JSON, TRACE_ID, TenantResponse, default_detail, problem_response};

/// The trace header, request and response.
pub const TRACE_HEADER: &str = "svc-trace-id";

fn trace_id_of(req: &ServiceRequest) -> String {
    req.headers()
        .get(TRACE_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned)
}

fn is_problem(res: &ServiceResponse<impl MessageBody>) -> bool {
    res.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(PROBLEM_JSON))
}

/// The middleware (use with `actix_web::middleware::from_fn`).
pub async fn trace_requests(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let trace_id = trace_id_of(&req);
    let span = tracing::info_span!(
        "request",
        trace_id = %trace_id,
        method = %req.method(),
        path = %req.path(),
        application_id = tracing::field::Empty,
    );
    let started = Instant::now();
    let result = TRACE_ID
        .scope(trace_id.clone(), next.call(req).instrument(span.clone()))
        .await;
    let mut res = match result {
        Ok(res)
            if res.status().as_u16() >= 400
                && !is_problem(&res)
                && res
                    .response()
                    .extensions()
                    .get::<TenantResponse>()
                    .is_none() =>
        {
            let status = res.status();
            let (req, _) = res.into_parts();
            let body = TRACE_ID.sync_scope(trace_id.clone(), || {
                problem_response(status, default_detail(status), None)
            });
            ServiceResponse::new(req, body)
        }
        Ok(res) => res.map_into_boxed_body(),
        // Routing and handlers turn their errors into responses; an error here never carries a
        // request to build a response on (cloning the request before routing is not allowed).
        Err(err) => return Err(err),
    };
    if let Some(metrics) = res.request().app_data::<actix_web::web::Data<Metrics>>() {
        metrics.request(
            res.request().method(),
            route_label(res.request()),
            res.status().as_u16(),
            started.elapsed(),
        );
    }
    if let Ok(value) = HeaderValue::from_str(&trace_id) {
        res.headers_mut()
            .insert(HeaderName::from_static(TRACE_HEADER), value);
    }
    if res
        .response()
        .extensions()
        .get::<TenantResponse>()
        .is_some()
    {
        confine(res.headers_mut());
    }
    span.in_scope(|| {
        tracing::info!(
            route = %route_label(res.request()),
            status = res.status().as_u16(),
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            "request finished"
        );
    });
    Ok(res)
}

/// A response whose headers and body a tenant chose (a proxy's destination or transform, a
/// `CustomHttpResponseError`), served on the console's origin: a browser that opens one as a
/// page runs it in a sandbox of its own origin (`Content-Security-Policy: sandbox`, added to
/// whatever policy it carries), so it reaches neither the console's storage nor its requests,
/// and it may not widen a service worker's scope (`Service-Worker-Allowed` dropped).
pub(crate) fn confine(headers: &mut actix_web::http::header::HeaderMap) {
    headers.remove(HeaderName::from_static("service-worker-allowed"));
    headers.append(
        actix_web::http::header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox"),
    );
}
