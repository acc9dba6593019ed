//! `/sessions`: a public application starts a session, a private one authorizes it
//! (docs/decisions.md §4, sessions).

use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};
use tokenvault_domain::Vault;
use tokenvault_domain::session::RawSessionGrant;
use utoipa::ToSchema;

use crate::BrowserCors;
use crate::dto::{RuleRequest, format_time, parse_time};
use crate::extract::Caller;
use crate::idempotency::NeverReplayed;
use crate::json_body::Json;
use crate::problem::{ApiError, Problem};

type Result<T> = std::result::Result<T, ApiError>;

/// A session just started. `session_key` works as `SVC-API-KEY` once the session is authorized
/// and until `expires_at`; `nonce` is what the authorizing backend sends. Both are shown once.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionResponse {
    /// The session's API key.
    pub session_key: String,
    /// Single-use authorization nonce.
    pub nonce: String,
    /// End of life unless the authorization sets another (RFC 3339 UTC).
    pub expires_at: String,
}

/// `POST /sessions/authorize`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AuthorizeSessionRequest {
    /// The nonce of the session to authorize.
    pub nonce: Option<String>,
    /// Token permissions granted on every token (each must be held by the caller).
    pub permissions: Option<Vec<String>>,
    /// Rules with `conditions` (not `container`) granting permissions on the tokens they select.
    pub rules: Option<Vec<RuleRequest>>,
    /// RFC 3339, in the future and at most one hour away; default: the `expires_at` shown at
    /// creation (3 minutes after it).
    pub expires_at: Option<String>,
}

/// Start a session (public application key).
#[utoipa::path(post, path = "/sessions", tag = "sessions",
    responses((status = 201, body = SessionResponse), (status = 401, body = Problem),
              (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn create(vault: web::Data<Vault>, Caller(caller): Caller) -> Result<HttpResponse> {
    let started = vault.sessions.create_session(&caller).await?;
    Ok(HttpResponse::Created().json(SessionResponse {
        session_key: started.key.expose().to_string(),
        nonce: started.nonce.expose().to_string(),
        expires_at: format_time(started.session.expires_at),
    }))
}

/// Authorize a session (private application key).
#[utoipa::path(post, path = "/sessions/authorize", tag = "sessions",
    request_body = AuthorizeSessionRequest,
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn authorize(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    Json(body): Json<AuthorizeSessionRequest>,
) -> Result<HttpResponse> {
    let expires_at = body
        .expires_at
        .as_deref()
        .map(|raw| parse_time("expires_at", raw))
        .transpose()?;
    let raw = RawSessionGrant {
        nonce: body.nonce,
        permissions: body.permissions,
        rules: body
            .rules
            .map(|rules| rules.into_iter().map(Into::into).collect()),
        expires_at,
    };
    vault.sessions.authorize_session(&caller, raw).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Registers the routes; `POST /sessions` answers browsers (`browser`, docs/decisions.md §11).
pub fn configure(cfg: &mut web::ServiceConfig, browser: &BrowserCors) {
    cfg.service(
        resource!("/sessions")
            .app_data(NeverReplayed)
            .wrap(browser.middleware())
            .route(web::post().to(create)),
    )
    .service(resource!("/sessions/authorize").route(web::post().to(authorize)));
}
