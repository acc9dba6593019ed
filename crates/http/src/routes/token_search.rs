//! `POST /tokens/search` (docs/decisions.md §12): the search language over the caller's
//! tokens, answered like `GET /tokens`.

use actix_web::{HttpResponse, guard, web};
use serde::Deserialize;
use tokenvault_domain::Vault;
use tokenvault_domain::page::PageRequest;
use utoipa::ToSchema;

use crate::dto::Paginated;
use crate::extract::Caller;
use crate::json_body::Json;
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
    Caller(caller): Caller,
    Json(body): Json<SearchRequest>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(
        body.page.map(|p| p.to_string()).as_deref(),
        body.size.map(|s| s.to_string()).as_deref(),
    )?;
    let found = vault
        .tokens
        .search_tokens(&caller, body.query.as_deref().unwrap_or(""), page)
        .await?;
    Ok(HttpResponse::Ok().json(Paginated::from_page(found, TokenResponse::from)))
}

/// Registers the route ahead of the `/tokens` scope. Only `POST` matches it (a guard, not a
/// route), so a `GET /tokens/search` goes on to the scope and reads the token whose id is
/// `search`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        resource!("/tokens/search")
            .guard(guard::Post())
            .route(web::post().to(search)),
    );
}
