//! Changes run to completion. Actix drops a handler's future when its client goes away; a change
//! dropped half-way could leave a token stored without its audit entry or its usage record, or a
//! reserved idempotency key without its answer. Every request that may change state (`POST`,
//! `PUT`, `PATCH`, `DELETE`) and every proxy call (`/proxy` and `/proxy/…`, any method: it
//! detokenizes data to a destination, and a `GET` does so as much as a `POST`) therefore runs as
//! its own task on the worker, which the connection awaits but does not own: a client that
//! leaves loses its answer, never half a change.
//!
//! Detached tasks are bounded ([`Detached`], [`MAX_DETACHED`] per server): a client that leaves
//! no longer holds a connection, so actix's connection limit no longer bounds them. When every
//! slot is taken, a change runs inline (in the request's own future) instead of being refused:
//! the server stays available, and only a change whose client leaves while the server is that
//! busy can be cut as it could before this module. At shutdown the server stops accepting and
//! waits for the detached tasks ([`Detached::drain`]) before actix stops its workers (which
//! only waits for open connections).

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::web;
use futures_util::FutureExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tracing::Instrument;

use crate::metrics::Metrics;
use crate::problem::{TRACE_ID, problem_response};
use crate::trace::TRACE_HEADER;

/// Changes that may run detached at once, per server. A few hundred: far above what a healthy
/// server has in flight (a change holds a database connection), low enough that clients that
/// leave cannot pile up unbounded work.
pub const MAX_DETACHED: usize = 256;

/// The detached changes of one server: a bound on how many run at once, and a way to wait for
/// them at shutdown. Shared by every worker.
#[derive(Debug)]
pub struct Detached {
    slots: Arc<Semaphore>,
    size: usize,
    running: Arc<AtomicUsize>,
}

impl Default for Detached {
    fn default() -> Self {
        Self::new(MAX_DETACHED)
    }
}

/// A detached change's slot, held by its task: freed when the task ends, panics or is dropped.
struct Slot {
    _permit: OwnedSemaphorePermit,
    running: Arc<AtomicUsize>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.running.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Detached {
    /// At most `size` changes detached at once.
    pub fn new(size: usize) -> Self {
        let size = size.min(Semaphore::MAX_PERMITS);
        Self {
            slots: Arc::new(Semaphore::new(size)),
            size,
            running: Arc::default(),
        }
    }

    /// How many detached changes are running now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::Acquire)
    }

    /// A slot, or `None` when all are taken (or the server is draining).
    fn slot(&self) -> Option<Slot> {
        let permit = self.slots.clone().try_acquire_owned().ok()?;
        self.running.fetch_add(1, Ordering::AcqRel);
        Some(Slot {
            _permit: permit,
            running: self.running.clone(),
        })
    }

    /// For shutdown: returns once no change runs detached. From the call on, changes no longer
    /// detach (they run inline, and graceful stop waits for them with their connections); if
    /// the future is dropped before it returns (a timeout), they may again.
    pub async fn drain(&self) {
        let all = u32::try_from(self.size).unwrap_or(u32::MAX);
        if let Ok(permits) = self.slots.acquire_many(all).await {
            permits.forget();
        }
    }
}

/// Whether the request must not be cut by its client leaving.
fn must_complete(req: &ServiceRequest) -> bool {
    !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS)
        // The path as the router matches it (percent-decoded), not as sent: `/%70roxy` is
        // routed to `/proxy` too.
        || is_proxy_call(req.match_info().as_str())
}

/// The proxy invocation routes: `/proxy` and `/proxy/{tail:.*}` (`routes/proxies.rs`).
fn is_proxy_call(path: &str) -> bool {
    path == "/proxy" || path.starts_with("/proxy/")
}

/// The middleware (use with `actix_web::middleware::from_fn`).
pub async fn run_to_completion(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    if !must_complete(&req) {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    }
    let started = Instant::now();
    let slot = req
        .app_data::<web::Data<Detached>>()
        .and_then(|detached| detached.slot());
    // What counting a panicked request needs: the request itself is gone with the panic.
    // Matched here, not read from the resource's label as the trace middleware does: that is
    // set once routing ran, and holding a clone of the request through routing is not allowed.
    let method = req.method().clone();
    let route = req.resource_map().match_pattern(req.match_info().as_str());
    let metrics = req.app_data::<web::Data<Metrics>>().cloned();
    // The task carries the request's span and trace id (a task-local, which a new task does not
    // inherit; the trace middleware around this one always sets it).
    let trace_id = TRACE_ID.try_with(Clone::clone).unwrap_or_default();
    let change = TRACE_ID.scope(
        trace_id.clone(),
        next.call(req).instrument(tracing::Span::current()),
    );
    let outcome = match slot {
        Some(slot) => actix_web::rt::spawn(async move {
            let _slot = slot;
            change.await
        })
        .await
        .map_err(|e| {
            e.try_into_panic()
                .map_or_else(|_| "the task was cancelled".into(), panic_message)
        }),
        // Every slot is taken: the change runs in this future, which its client's leaving
        // drops (see the module's documentation). A panic still answers a problem.
        None => AssertUnwindSafe(change)
            .catch_unwind()
            .await
            .map_err(panic_message),
    };
    match outcome {
        Ok(answer) => answer.map(ServiceResponse::map_into_boxed_body),
        Err(message) => {
            tracing::error!(panic = %message, "the request panicked");
            if let Some(metrics) = metrics {
                metrics.request(
                    &method,
                    route.map_or(Cow::Borrowed("unmatched"), Cow::Owned),
                    StatusCode::INTERNAL_SERVER_ERROR.as_u16(),
                    started.elapsed(),
                );
            }
            Err(panicked(&trace_id))
        }
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// The answer to a panicked request: the generic 500 problem every internal error gets, with
/// the trace id in its body and header. An error, not a response: the request that a response
/// is built on went down with the panic (the trace middleware passes errors through, which is
/// why this one carries its header and was counted here).
fn panicked(trace_id: &str) -> actix_web::Error {
    let mut response = TRACE_ID.sync_scope(trace_id.to_string(), || {
        problem_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            "An unexpected error occurred.",
            None,
        )
    });
    if let Ok(value) = HeaderValue::from_str(trace_id) {
        response
            .headers_mut()
            .insert(HeaderName::from_static(TRACE_HEADER), value);
    }
    actix_web::error::InternalError::from_response("the request panicked", response).into()
}

#[cfg(test)]
mod tests {
    use actix_web::middleware::from_fn;
    use actix_web::{App, HttpResponse, test};

    use super::*;
    use crate::problem::PROBLEM_JSON;
    use crate::trace::trace_requests;

    /// Answers how many changes run detached while it runs (1 when it is one of them).
    async fn detached_now(detached: web::Data<Detached>) -> HttpResponse {
        HttpResponse::Ok().body(detached.running().to_string())
    }

    async fn boom() -> HttpResponse {
        panic!("boom")
    }

    async fn call(
        size: usize,
        method: Method,
        path: &str,
    ) -> (StatusCode, actix_web::web::Bytes, Arc<Metrics>) {
        let detached = web::Data::new(Detached::new(size));
        let metrics = Arc::new(Metrics::default());
        let app = test::init_service(
            App::new()
                .app_data(detached.clone())
                .app_data(web::Data::from(metrics.clone()))
                .wrap(from_fn(run_to_completion))
                .wrap(from_fn(trace_requests))
                .route("/proxy", web::route().to(detached_now))
                .route("/proxy/{tail:.*}", web::route().to(detached_now))
                .route("/proxyless", web::route().to(detached_now))
                .route("/tokens", web::route().to(detached_now))
                .route("/boom", web::route().to(boom)),
        )
        .await;
        let req = test::TestRequest::default()
            .method(method)
            .uri(path)
            .insert_header((TRACE_HEADER, "trace-boom"))
            .to_request();
        let (status, body) = match test::try_call_service(&app, req).await {
            Ok(res) => (res.status(), test::read_body(res).await),
            Err(e) => {
                let res = e.error_response();
                assert_eq!(res.headers().get(TRACE_HEADER).unwrap(), "trace-boom");
                let status = res.status();
                assert_eq!(res.headers().get("content-type").unwrap(), PROBLEM_JSON);
                let body = actix_web::body::to_bytes(res.into_body()).await.unwrap();
                (status, body)
            }
        };
        assert_eq!(detached.running(), 0, "every slot is freed");
        (status, body, metrics)
    }

    #[actix_web::test]
    async fn changes_and_every_proxy_call_run_detached() {
        for (method, path, detached) in [
            (Method::POST, "/tokens", "1"),
            (Method::DELETE, "/tokens", "1"),
            (Method::GET, "/tokens", "0"),
            (Method::GET, "/proxy", "1"),
            (Method::HEAD, "/proxy/a/b", "1"),
            (Method::OPTIONS, "/proxy/", "1"),
            (Method::GET, "/%70roxy/a", "1"),
            (Method::GET, "/proxyless", "0"),
        ] {
            let (status, body, _) = call(4, method.clone(), path).await;
            assert_eq!(status, StatusCode::OK, "{method} {path}");
            if method != Method::HEAD {
                assert_eq!(body, detached, "{method} {path}");
            }
        }
    }

    #[actix_web::test]
    async fn with_every_slot_taken_a_change_runs_inline() {
        let (status, body, _) = call(0, Method::POST, "/tokens").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, "0", "not refused, run in the request's own future");
    }

    #[actix_web::test]
    async fn a_panicked_change_is_a_counted_problem_with_its_trace_id() {
        for size in [4, 0] {
            let (status, body, metrics) = call(size, Method::POST, "/boom").await;
            assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
            let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(problem["status"], 500);
            assert_eq!(problem["trace_id"], "trace-boom");
            assert_eq!(problem["detail"], "An unexpected error occurred.");
            let shown = metrics.render(0, 0);
            assert!(
                shown.contains(
                    "tokenvault_http_requests_total{method=\"POST\",route=\"/boom\",status=\"500\"} 1"
                ),
                "{shown}"
            );
        }
    }

    #[actix_web::test]
    async fn drain_waits_for_detached_changes_and_stops_new_ones_detaching() {
        let detached = Detached::new(2);
        let slot = detached.slot().expect("a free slot");
        assert_eq!(detached.running(), 1);
        let mut drain = Box::pin(detached.drain());
        assert!((&mut drain).now_or_never().is_none(), "one still runs");
        assert!(
            detached.slot().is_none(),
            "no new change detaches meanwhile"
        );
        drop(slot);
        assert_eq!(detached.running(), 0);
        assert!(drain.now_or_never().is_some(), "none runs");
        assert!(detached.slot().is_none(), "nor after");
    }
}
