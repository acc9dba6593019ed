//! `POST /tokens/search` (docs/decisions.md §12): the search language over the caller's
//! tokens, answered like `GET /tokens`.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, HttpResponse, guard, web};
use serde::Deserialize;
use tokenvault_domain::Vault;
use tokenvault_domain::auth::Principal;
use tokenvault_domain::page::PageRequest;
use tokenvault_domain::service::PrefetchedSearch;
use utoipa::ToSchema;

use crate::dto::Paginated;
use crate::extract::keyed_caller;
use crate::idempotency::NeverReplayed;
use crate::json_body::{is_json_content_type, json_of};
use crate::problem::{ApiError, Problem};
use crate::routes::tokens::TokenResponse;

/// A search: the query, and the page wanted.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SearchRequest {
    /// `field:value` terms joined by `AND`, `OR`, `NOT` (or `-term`), with parentheses; at most
    /// 10 terms; empty: every token the caller may search. Fields: `id`, `type`, `data`,
    /// `fingerprint`, `container` (`/pci/*` for a subtree), `metadata.<key>`, `created_by`,
    /// `modified_by`, `created_at`, `modified_at` (a date or `[a TO b]`, `{a TO b}`).
    #[serde(default)]
    pub query: Option<String>,
    /// Page number, from 1 (default 1).
    #[serde(default)]
    pub page: Option<u64>,
    /// Page size, 1 to 100 (default 20).
    #[serde(default)]
    pub size: Option<u64>,
}

/// Search the tokens the caller may search, newest first, each under its `token:search`
/// transform.
#[utoipa::path(post, path = "/tokens/search", tag = "tokens", request_body = SearchRequest,
    responses((status = 200, body = Paginated<TokenResponse>), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn search(
    vault: web::Data<Vault>,
    CallerSearching(caller, prefetched, body): CallerSearching,
) -> Result<HttpResponse, ApiError> {
    let body = body?;
    let page = PageRequest::parse(
        body.page.map(|p| p.to_string()).as_deref(),
        body.size.map(|s| s.to_string()).as_deref(),
    )?;
    let found = vault
        .tokens
        .search_tokens(
            &caller,
            body.query.as_deref().unwrap_or(""),
            page,
            prefetched,
        )
        .await?;
    Ok(HttpResponse::Ok().json(Paginated::from_page(found, TokenResponse::from)))
}

/// The caller of `POST /tokens/search`, the matches read in the same round trip as its key
/// ([`tokenvault_domain::service::Authenticator::authenticate_searching`]) and the request's
/// body. A body that has already arrived is read before the key is looked up, so its query
/// can be read with the key (a request without a well-formed key is refused first); one still
/// arriving is read once the caller is known. A body that cannot be read or parsed is the
/// handler's error, answered only once the caller is authenticated. A request the idempotency
/// middleware already authenticated searches in the use case alone.
pub struct CallerSearching(
    Principal,
    Option<PrefetchedSearch>,
    Result<SearchRequest, ApiError>,
);

impl FromRequest for CallerSearching {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        // The content type decides how the body is read; a plain function either way.
        let parse: fn(Result<web::Bytes, ApiError>) -> Result<SearchRequest, ApiError> =
            if is_json_content_type(req) {
                |b| json_of::<SearchRequest>(true, b)
            } else {
                |b| json_of::<SearchRequest>(false, b)
            };
        let caller = keyed_caller(req, payload, parse, |vault, key, arrived| {
            Box::pin(async move {
                let query = arrived
                    .and_then(|b| b.as_ref().ok())
                    .and_then(|b| b.query.as_deref());
                Ok(vault
                    .auth
                    .authenticate_searching(key, &vault.tokens, query)
                    .await?)
            })
        });
        Box::pin(async move {
            let (principal, prefetched, body) = caller.await?;
            Ok(CallerSearching(principal, prefetched, body))
        })
    }
}

/// Registers the route ahead of the `/tokens` scope. Only `POST` matches it (a guard, not a
/// route), so a `GET /tokens/search` goes on to the scope and reads the token whose id is
/// `search`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        resource!("/tokens/search")
            .guard(guard::Post())
            // An answer of the tokens as they are now, each read in the log: never replayed.
            .app_data(NeverReplayed)
            .route(web::post().to(search)),
    );
}
