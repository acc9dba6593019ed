//! Extractors of the authenticated caller: its principal alone, or with what was read in the same
//! round trip as its key (the token a read names, the reactor and token a react names).

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::{FromRequest, HttpRequest, web};
use tokenvault_domain::Vault;
use tokenvault_domain::application::ApiKey;
use tokenvault_domain::auth::Principal;
use tokenvault_domain::service::{PrefetchedReactor, PrefetchedToken};
use uuid::Uuid;

use crate::dto::ReactRequest;
use crate::json_body::{body_bytes, parse_json};
use crate::limit::RateLimit;
use crate::problem::ApiError;
use actix_web::HttpMessage as _;

/// The API key header.
pub const API_KEY_HEADER: &str = "svc-api-key";

/// A request already authenticated, its rate counted and room in its tenant's audit log waited
/// for, by the idempotency middleware: the route's extractor takes the caller from here instead
/// of asking the database again (and of waiting again).
#[derive(Clone, Debug)]
pub struct Authenticated(pub Principal);

/// The authenticated caller of a route (401 when the key is missing, unknown or expired).
pub struct Caller(pub Principal);

/// The caller's key from the request.
pub(crate) fn api_key(req: &HttpRequest) -> Option<String> {
    req.headers()
        .get(API_KEY_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

pub(crate) fn no_vault() -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "An unexpected error occurred.",
    )
}

/// What every authenticated request goes through once its principal is known (the idempotency
/// middleware does the same for the requests it takes): the trace id for the audit log, the
/// application's rate limit, the span's `application_id`, then room in its
/// tenant's audit log (a wait while it is behind; after the rate limit, so that a request over
/// its rate is refused at once and never takes a waiting place).
pub(crate) async fn admit(
    vault: &Vault,
    mut principal: Principal,
    limit: Option<&RateLimit>,
) -> Result<Principal, ApiError> {
    principal.trace_id = crate::problem::current_trace_id();
    if let Some(limit) = limit {
        limit.check(principal.application_id)?;
    }
    tracing::Span::current().record(
        "application_id",
        tracing::field::display(principal.application_id),
    );
    vault.auth.room(principal.tenant_id).await?;
    Ok(principal)
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        if let Some(Authenticated(mut principal)) = req.extensions().get::<Authenticated>().cloned()
        {
            principal.trace_id = crate::problem::current_trace_id();
            tracing::Span::current().record(
                "application_id",
                tracing::field::display(principal.application_id),
            );
            return Box::pin(async move { Ok(Caller(principal)) });
        }
        let vault = req.app_data::<web::Data<Vault>>().cloned();
        let limit = req.app_data::<web::Data<RateLimit>>().cloned();
        let key = api_key(req);
        Box::pin(async move {
            let vault = vault.ok_or_else(no_vault)?;
            let principal = vault.auth.authenticate(key.as_deref()).await?;
            let limit = limit.as_ref().map(web::Data::get_ref);
            Ok(Caller(admit(&vault, principal, limit).await?))
        })
    }
}

/// The caller of `GET /tokens/{id}` and, read in the same round trip as its key, the token the
/// path names ([`tokenvault_domain::service::Authenticator::authenticate_reading`]); the rate limit is counted before the token is
/// looked at, as for [`Caller`].
pub struct CallerReading(pub Principal, pub Option<PrefetchedToken>);

impl FromRequest for CallerReading {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let vault = req.app_data::<web::Data<Vault>>().cloned();
        let limit = req.app_data::<web::Data<RateLimit>>().cloned();
        let key = api_key(req);
        // Decoded as the handler's `web::Path<String>` decodes it, so the row read is the one
        // the handler asks for (otherwise it is only read twice).
        let id = web::Path::<String>::extract(req);
        Box::pin(async move {
            let id = id.await.map(web::Path::into_inner).unwrap_or_default();
            let vault = vault.ok_or_else(no_vault)?;
            let (principal, prefetched) =
                vault.auth.authenticate_reading(key.as_deref(), &id).await?;
            let limit = limit.as_ref().map(web::Data::get_ref);
            Ok(CallerReading(
                admit(&vault, principal, limit).await?,
                prefetched,
            ))
        })
    }
}

/// The caller of `POST /reactors/{id}/react`, what was read in the same round trip as its key
/// (the reactor the path names with its formula, and the token the arguments name:
/// [`tokenvault_domain::service::Authenticator::authenticate_reacting`]), and the request's
/// `args`. A body that has already arrived is read before the key is looked up, so its token can
/// be read with the key (a request without a well-formed key is refused first); one still
/// arriving is read once the caller is known. A body that cannot be read or parsed is the
/// handler's error, answered only once the caller is authenticated. A request the idempotency
/// middleware already authenticated reads the reactor in the use case instead.
pub struct CallerReacting(
    pub Principal,
    pub Option<PrefetchedReactor>,
    pub Result<Option<serde_json::Value>, ApiError>,
);

/// A react's `args`: none for an empty body (or `{}`), a 400 naming the field for bad JSON.
fn react_args(body: Result<web::Bytes, ApiError>) -> Result<Option<serde_json::Value>, ApiError> {
    let body = body?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    Ok(parse_json::<ReactRequest>(&body)?.args)
}

impl FromRequest for CallerReacting {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        // Decoded as the handler's `web::Path<String>` decodes it, as for [`CallerReading`].
        let id = web::Path::<String>::extract(req);
        let caller = keyed_caller(req, payload, react_args, move |vault, key, arrived| {
            Box::pin(async move {
                let id = id.await.ok().and_then(|id| Uuid::parse_str(&id).ok());
                Ok(match id {
                    Some(id) => {
                        let named = arrived
                            .and_then(|args| args.as_ref().ok())
                            .and_then(Option::as_ref);
                        vault.auth.authenticate_reacting(key, id, named).await?
                    }
                    // No such reactor: authenticate alone; the handler answers for the path.
                    None => (vault.auth.authenticate(key).await?, None),
                })
            })
        });
        Box::pin(async move {
            let (principal, prefetched, args) = caller.await?;
            Ok(CallerReacting(principal, prefetched, args))
        })
    }
}

/// What a read-ahead extractor's authentication returns: the caller, and what was read beside
/// its key.
pub(crate) type AheadFuture<'a, P> =
    Pin<Box<dyn Future<Output = Result<(Principal, Option<P>), ApiError>> + 'a>>;

/// What [`keyed_caller`] answers: the admitted caller, what was read beside its key, the body.
pub(crate) type KeyedCaller<P, B> =
    Pin<Box<dyn Future<Output = Result<(Principal, Option<P>, B), ApiError>>>>;

/// The caller of a route that reads ahead beside its key (a react, a search), what was read,
/// and the request's body read by `parse`. A request without a well-formed key is refused
/// before anything else. A body that has already arrived is parsed before the key is looked
/// up and handed to `authenticate`, so what it names can be read with the key; one still
/// arriving is awaited only once the caller is known, so a slow body never holds the server
/// for a key that is no key. The caller is then admitted ([`admit`]). A request the
/// idempotency middleware already authenticated reads nothing ahead.
pub(crate) fn keyed_caller<B: 'static, P: 'static>(
    req: &HttpRequest,
    payload: &mut Payload,
    parse: fn(Result<web::Bytes, ApiError>) -> B,
    authenticate: impl for<'a> FnOnce(&'a Vault, Option<&'a str>, Option<&'a B>) -> AheadFuture<'a, P>
    + 'static,
) -> KeyedCaller<P, B> {
    let body = body_bytes(req, payload);
    if req.extensions().get::<Authenticated>().is_some() {
        let caller = Caller::from_request(req, payload);
        return Box::pin(async move {
            let body = parse(body.await);
            Ok((caller.await?.0, None, body))
        });
    }
    let vault = req.app_data::<web::Data<Vault>>().cloned();
    let limit = req.app_data::<web::Data<RateLimit>>().cloned();
    let key = api_key(req);
    let mut body = Box::pin(body);
    Box::pin(async move {
        let vault = vault.ok_or_else(no_vault)?;
        if key.as_deref().and_then(ApiKey::parse).is_none() {
            return Err(tokenvault_domain::Error::Unauthenticated.into());
        }
        let arrived = futures_util::future::poll_immediate(body.as_mut())
            .await
            .map(parse);
        let (principal, prefetched) =
            authenticate(&vault, key.as_deref(), arrived.as_ref()).await?;
        let limit = limit.as_ref().map(web::Data::get_ref);
        let caller = admit(&vault, principal, limit).await?;
        let body = match arrived {
            Some(body) => body,
            None => parse(body.await),
        };
        Ok((caller, prefetched, body))
    })
}
