//! `SVC-IDEMPOTENCY-KEY` on POST, PUT and PATCH (docs/decisions.md §11): the first success is
//! stored (encrypted, by the use cases) and replayed; a request still in flight is a 409; the
//! same key with another request a 422. Requests without the header, or whose API key does not
//! authenticate (the route answers those), pass through untouched.
//!
//! The middleware wraps each resource (the `resource!` macro), not the application: it runs
//! after the router matched the request, so whether a route is ever stored is decided by the
//! route itself ([`NeverReplayed`], set where it is registered), never by the path's text
//! (`/%64etokenize` is routed to `/detokenize` and is never stored either).

use actix_web::HttpMessage;
use actix_web::body::{BoxBody, MessageBody, to_bytes};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::header::CONTENT_TYPE;
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::web::{self, Bytes};
use actix_web::{HttpResponse, ResponseError};
use tokenvault_domain::Vault;
use tokenvault_domain::auth::Principal;
use tokenvault_domain::error::Error;
use tokenvault_domain::service::{Idempotent, Replay};

use crate::extract::{API_KEY_HEADER, Authenticated};
use crate::limit::RateLimit;
use crate::problem::ApiError;
use crate::replay::{StoredResponse, replayable};

/// The request header.
pub const IDEMPOTENCY_HEADER: &str = "svc-idempotency-key";

fn header(req: &ServiceRequest, name: &str) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The mark of a route whose answer is never stored nor replayed, whatever its key: the
/// detokenize, react and proxy invocations (their answer is what the caller may see *now*:
/// detokenized values, code output, a third party's answer; a replay would outlive a
/// permission change) and `POST /sessions` (its answer is a bearer secret, which a guessed
/// key must never hand to another caller). Set as the resource's data where the route is
/// registered: `resource!("/detokenize").app_data(NeverReplayed)`.
#[derive(Clone, Copy, Debug)]
pub struct NeverReplayed;

/// Releases the key if the request never got to complete it (its future was dropped: the client
/// went away, the server stopped), so a retry need not wait for the lease to run out.
struct Held {
    armed: Option<(web::Data<Vault>, Principal, String)>,
}

impl Drop for Held {
    fn drop(&mut self) {
        // Never panics: without a runtime (the process is ending) the lease frees the key.
        if let (Some((vault, caller, key)), Ok(runtime)) =
            (self.armed.take(), tokio::runtime::Handle::try_current())
        {
            runtime.spawn(async move {
                let _ = vault.idempotency.idempotency_release(&caller, &key).await;
            });
        }
    }
}

/// The middleware (use with `actix_web::middleware::from_fn`).
pub async fn idempotent(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    // The resource's data: the router has matched the route by now.
    let applies = matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH)
        && req.app_data::<NeverReplayed>().is_none();
    let (Some(key), true) = (header(&req, IDEMPOTENCY_HEADER), applies) else {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    };
    let Some(vault) = req.app_data::<web::Data<Vault>>().cloned() else {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    };
    let caller = match vault
        .auth
        .authenticate(header(&req, API_KEY_HEADER).as_deref())
        .await
    {
        Ok(caller) => caller,
        // The route answers an unknown key as it always does.
        Err(Error::Unauthenticated) => {
            return next
                .call(req)
                .await
                .map(ServiceResponse::map_into_boxed_body);
        }
        // Anything else (a failed read) is the answer: the route never runs without its
        // key's protection.
        Err(e) => return Ok(req.error_response(ApiError::from(e))),
    };
    // Counted here, before any work, and once: the route takes the caller from the request.
    if let Some(limit) = req.app_data::<web::Data<RateLimit>>()
        && let Err(e) = limit.check(caller.application_id)
    {
        return Ok(req.error_response(e));
    }
    // Then room in its tenant's audit log, as `extract::admit` waits for it (the route takes
    // this caller as admitted).
    if let Err(e) = vault.auth.room(caller.tenant_id).await {
        return Ok(req.error_response(ApiError::from(e)));
    }
    req.extensions_mut().insert(Authenticated(caller.clone()));
    // The body is read here (within the body limit) and handed on to the route.
    let body = match req.extract::<Bytes>().await {
        Ok(body) => body,
        Err(e) => return Ok(req.error_response(e)),
    };
    let mut described = Vec::with_capacity(body.len() + 64);
    for part in [
        req.method().as_str().as_bytes(),
        req.path().as_bytes(),
        req.query_string().as_bytes(),
    ] {
        described.extend_from_slice(part);
        described.push(0);
    }
    described.extend_from_slice(&body);
    req.set_payload(Payload::from(body));
    match vault
        .idempotency
        .idempotency_begin(&caller, &key, &described)
        .await
    {
        Err(e) => Ok(req.error_response(ApiError::from(e))),
        Ok(Idempotent::InFlight) => Ok(req.error_response(ApiError::new(
            StatusCode::CONFLICT,
            "A request with this SVC-IDEMPOTENCY-KEY is still being processed.",
        ))),
        Ok(Idempotent::Unreplayable) => Ok(req.error_response(unreplayable())),
        Ok(Idempotent::Replay(replay)) => {
            // A record this adapter cannot read back (one stored by an older build as a
            // marker) is a success that cannot be replayed.
            let Some((status, stored)) = replayable(&replay.0) else {
                return Ok(req.error_response(unreplayable()));
            };
            let mut response = HttpResponse::build(status);
            if let Some(ct) = stored.content_type {
                response.insert_header((CONTENT_TYPE, ct));
            }
            Ok(req.into_response(response.body(stored.body)))
        }
        Ok(Idempotent::Proceed) => {
            let mut held = Held {
                armed: Some((vault.clone(), caller.clone(), key.clone())),
            };
            let res = next.call(req).await;
            held.armed = None;
            let res = match res {
                Ok(res) => res,
                Err(e) => {
                    let _ = vault.idempotency.idempotency_release(&caller, &key).await;
                    return Err(e);
                }
            };
            if !res.status().is_success() {
                if let Err(e) = vault.idempotency.idempotency_release(&caller, &key).await {
                    tracing::warn!(error = %e.chain(), "releasing an idempotency key");
                }
                return Ok(res.map_into_boxed_body());
            }
            let status = res.status();
            let content_type = res
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let (req, response) = res.into_parts();
            let (parts, body) = response.into_parts();
            let Ok(bytes) = to_bytes(body).await else {
                // What the route did is done; the key stays held until its lease runs out
                // rather than letting a retry do it twice.
                return Ok(ServiceResponse::new(
                    req,
                    ApiError::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "An unexpected error occurred.",
                    )
                    .error_response(),
                ));
            };
            let stored = StoredResponse {
                status: status.as_u16(),
                content_type,
                body: bytes.to_vec(),
            };
            if let Err(e) = vault
                .idempotency
                .idempotency_complete(&caller, &key, &Replay(stored.encode()))
                .await
            {
                // The request succeeded; only its replay is lost. The key stays held until its
                // lease runs out (409 meanwhile), rather than letting a retry run it twice.
                tracing::error!(error = %e.chain(), "storing an idempotent response");
            }
            Ok(ServiceResponse::new(
                req,
                parts.set_body(bytes).map_into_boxed_body(),
            ))
        }
    }
}

/// The answer to a key whose request succeeded but whose response was not kept.
fn unreplayable() -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "A request with this SVC-IDEMPOTENCY-KEY succeeded; its response cannot be replayed.",
    )
}
