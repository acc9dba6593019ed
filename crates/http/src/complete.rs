//! Changes run to completion. Actix drops a handler's future when its client goes away; a change
//! dropped half-way could leave a token stored without its audit entry or its usage record, or a
//! reserved idempotency key without its answer. Every request that may change state
//! (`POST`, `PUT`, `PATCH`, `DELETE`) therefore runs as its own task on the worker, which the
//! connection awaits but does not own: a client that leaves loses its answer, never half a change.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::Next;
use tracing::Instrument;

use crate::problem::TRACE_ID;

/// The middleware (use with `actix_web::middleware::from_fn`).
pub async fn run_to_completion(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    }
    // The task carries the request's span and trace id (a task-local, which a new task does not
    // inherit; the trace middleware around this one always sets it).
    let trace_id = TRACE_ID.try_with(Clone::clone).unwrap_or_default();
    let change = TRACE_ID.scope(
        trace_id,
        next.call(req).instrument(tracing::Span::current()),
    );
    match actix_web::rt::spawn(change).await {
        Ok(answer) => answer.map(ServiceResponse::map_into_boxed_body),
        // The task panicked: the client gets the server error a panic would have given it.
        Err(_) => Err(actix_web::error::ErrorInternalServerError(
            "the request failed",
        )),
    }
}
