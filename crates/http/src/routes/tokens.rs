//! `/tokens`, `/tokenize`, `/detokenize`, associations and the usage report.

use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Serialize;
use serde_json::Value;
use tokenvault_domain::Vault;
use tokenvault_domain::ports::{TokenFilter, Visibility};
use tokenvault_domain::privacy::Privacy;
use tokenvault_domain::service::{TokenView, Tokenized};
use tokenvault_domain::token::RawTokenPatch;
use tokenvault_domain::token_new::RawNewToken;
use utoipa::ToSchema;

use crate::BrowserCors;
use crate::dto::{Paginated, format_time};
use crate::extract::{Caller, CallerReading};
use crate::idempotency::NeverReplayed;
use crate::json_body::{Json, parse_json};
use crate::problem::{ApiError, Problem};
use crate::query::QueryParams;

type Result<T> = std::result::Result<T, ApiError>;

/// A token. `data` is present only where the caller's transform shows it. (No `Debug`: it
/// may hold data.)
#[derive(Serialize, ToSchema)]
pub struct TokenResponse {
    /// Identifier.
    pub id: String,
    /// Owning tenant.
    pub tenant_id: uuid::Uuid,
    /// Token type.
    #[serde(rename = "type")]
    pub token_type: String,
    /// The value, revealed or masked; absent when redacted and in create responses.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
    /// Its container (one).
    pub containers: Vec<String>,
    /// Non-sensitive key/values.
    pub metadata: BTreeMap<String, String>,
    /// Keyed hash of the fingerprint expression's output (base58).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// Its own fingerprint expression.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint_expression: Option<String>,
    /// Its own mask: an expression, or an object of them (never data).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub mask: Option<Value>,
    /// Creating application.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_by: Option<uuid::Uuid>,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// Last modifying application.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_by: Option<uuid::Uuid>,
    /// RFC 3339 UTC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_at: Option<String>,
    /// RFC 3339 UTC; the token is gone then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// Derived from the container and the mask; read-only.
    pub privacy: PrivacyResponse,
    /// Its search index expressions (never their values).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub search_indexes: Vec<String>,
}

/// A token's privacy (docs/decisions.md §12): read-only, derived from the token.
#[derive(Serialize, ToSchema)]
pub struct PrivacyResponse {
    /// The first segment of a `/<classification>/<impact_level>/` container, else `general`.
    pub classification: String,
    /// The second segment of such a container, else `high`.
    pub impact_level: String,
    /// `mask` when the token has a mask (its own or its type's), else `redact`.
    pub restriction_policy: &'static str,
}

impl From<TokenView> for TokenResponse {
    fn from(v: TokenView) -> Self {
        let t = v.token;
        let privacy = Privacy::of(&t);
        Self {
            id: t.id,
            tenant_id: t.tenant_id,
            token_type: t.token_type.as_str().to_string(),
            data: v.shown,
            containers: vec![t.container.as_str().to_string()],
            metadata: t.metadata,
            fingerprint: t.fingerprint,
            fingerprint_expression: t.fingerprint_expression,
            mask: t.mask,
            created_by: t.created_by,
            created_at: format_time(t.created_at),
            modified_by: t.modified_by,
            modified_at: t.modified_at.map(format_time),
            expires_at: t.expires_at.map(format_time),
            privacy: PrivacyResponse {
                classification: privacy.classification,
                impact_level: privacy.impact_level,
                restriction_policy: privacy.restriction_policy,
            },
            search_indexes: t.search_indexes,
        }
    }
}

/// `POST /tokens` (documentation of the accepted shape; parsed field by field).
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct CreateTokenRequest {
    /// One of token, card, bank, card_number, social_security_number, employer_id_number,
    /// us_bank_account_number, us_bank_routing_number.
    #[schema(rename = "type")]
    token_type: String,
    /// Any JSON but null, validated per type.
    #[schema(value_type = Object)]
    data: Value,
    /// Literal (3–400 characters) or alias expression; without it, a UUIDv7 of the creation
    /// millisecond and 74 random bits.
    id: Option<String>,
    /// At most one container.
    containers: Option<Vec<String>>,
    /// String → string.
    metadata: Option<BTreeMap<String, String>>,
    /// Expression string or object of expressions.
    #[schema(value_type = Option<Object>)]
    mask: Option<Value>,
    /// Liquid expression fingerprinted.
    fingerprint_expression: Option<String>,
    /// Overrides the tenant's deduplication setting.
    deduplicate_token: Option<bool>,
    /// RFC 3339, in the future.
    expires_at: Option<String>,
    /// At most 10 Liquid expressions whose values `data:` searches match (each one non-empty
    /// value of at most 1024 characters); default: none, but for social security and employer
    /// numbers (`{{ data }}`, `{{ data | remove: '-' }}`, `{{ data | last4 }}`).
    search_indexes: Option<Vec<String>>,
}

fn object(body: Value) -> Result<serde_json::Map<String, Value>> {
    match body {
        Value::Object(map) => Ok(map),
        _ => Err(ApiError::invalid("body", "must be a JSON object")),
    }
}

fn raw_token(body: Value) -> Result<RawNewToken> {
    RawNewToken::from_object(&object(body)?).map_err(|e| ApiError::validation(&e))
}

/// Create a token; 200 with the existing token when deduplication finds one.
#[utoipa::path(post, path = "/tokens", tag = "tokens", request_body = CreateTokenRequest,
    responses((status = 201, body = TokenResponse), (status = 200, body = TokenResponse, description = "deduplicated"),
              (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
              (status = 409, body = Problem)),
    security(("api_key" = [])))]
pub async fn create(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    Json(body): Json<Value>,
) -> Result<HttpResponse> {
    let (view, created) = vault.tokens.create_token(&caller, raw_token(body)?).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(HttpResponse::build(status).json(TokenResponse::from(view)))
}

/// A list query given as a JSON object (`svc.tokens.list`): the same names as the query string
/// (`id`, `type`, `metadata.<key>`, `page`, `size`; arrays repeat a name).
pub(crate) fn filter_from_query(
    query: &serde_json::Map<String, Value>,
) -> Result<(TokenFilter, tokenvault_domain::page::PageRequest)> {
    let mut encoded = form_urlencoded::Serializer::new(String::new());
    for (key, value) in query {
        let values = match value {
            Value::Array(items) => items.clone(),
            Value::Object(inner) if key == "metadata" => {
                for (k, v) in inner {
                    let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                    encoded.append_pair(&format!("metadata.{k}"), &text);
                }
                continue;
            }
            other => vec![other.clone()],
        };
        for v in values {
            let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            encoded.append_pair(key, &text);
        }
    }
    let params = QueryParams::parse(&encoded.finish());
    Ok((filter_from(&params)?, params.page()?))
}

fn filter_from(query: &QueryParams) -> Result<TokenFilter> {
    let mut metadata = Vec::new();
    for (key, values) in query.pairs() {
        let name = key.strip_prefix("metadata.").or_else(|| {
            key.strip_prefix("metadata[")
                .and_then(|k| k.strip_suffix(']'))
        });
        if let Some(name) = name {
            if name.is_empty() || name.contains('"') || name.contains('\\') {
                return Err(ApiError::invalid(key, "is not a valid metadata key"));
            }
            for v in values {
                metadata.push((name.to_string(), v.clone()));
            }
        }
    }
    Ok(TokenFilter {
        ids: query.all("id").to_vec(),
        types: query.all("type").to_vec(),
        metadata,
        visibility: Visibility::All,
        parent: None,
    })
}

/// List tokens the caller may read, newest first; filters `id`, `type`, `metadata.<key>`.
#[utoipa::path(get, path = "/tokens", tag = "tokens",
    params(("id" = Option<Vec<String>>, Query), ("type" = Option<Vec<String>>, Query),
           ("page" = Option<u64>, Query), ("size" = Option<u64>, Query)),
    responses((status = 200, body = Paginated<TokenResponse>), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn list(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    query: QueryParams,
) -> Result<HttpResponse> {
    let filter = filter_from(&query)?;
    let page = vault
        .tokens
        .list_tokens(&caller, filter, query.page()?)
        .await?;
    Ok(HttpResponse::Ok().json(Paginated::from_page(page, TokenResponse::from)))
}

/// Read a token under the caller's transform.
#[utoipa::path(get, path = "/tokens/{id}", tag = "tokens", params(("id" = String, Path)),
    responses((status = 200, body = TokenResponse), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)),
    security(("api_key" = [])))]
pub async fn get(
    vault: web::Data<Vault>,
    CallerReading(caller, prefetched): CallerReading,
    id: web::Path<String>,
) -> Result<HttpResponse> {
    let view = vault
        .tokens
        .get_token_prefetched(&caller, &id, prefetched)
        .await?;
    Ok(HttpResponse::Ok().json(TokenResponse::from(view)))
}

/// Change a token with a JSON merge patch (`application/merge-patch+json`).
#[utoipa::path(patch, path = "/tokens/{id}", tag = "tokens", params(("id" = String, Path)),
    request_body(content = Object, content_type = "application/merge-patch+json"),
    responses((status = 200, body = TokenResponse), (status = 400, body = Problem), (status = 403, body = Problem),
              (status = 404, body = Problem), (status = 415, body = Problem)),
    security(("api_key" = [])))]
pub async fn update(
    vault: web::Data<Vault>,
    req: HttpRequest,
    Caller(caller): Caller,
    id: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse> {
    let merge_patch = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| {
            v.trim()
                .eq_ignore_ascii_case("application/merge-patch+json")
        });
    if !merge_patch {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "PATCH needs Content-Type: application/merge-patch+json.",
        ));
    }
    let map = object(parse_json(&body)?)?;
    let patch = RawTokenPatch::from_object(&map);
    let view = vault.tokens.update_token(&caller, &id, patch).await?;
    Ok(HttpResponse::Ok().json(TokenResponse::from(view)))
}

/// Delete a token and its associations.
#[utoipa::path(delete, path = "/tokens/{id}", tag = "tokens", params(("id" = String, Path)),
    responses((status = 204), (status = 403, body = Problem), (status = 404, body = Problem)),
    security(("api_key" = [])))]
pub async fn delete(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse> {
    vault.tokens.delete_token(&caller, &id).await?;
    Ok(HttpResponse::NoContent().finish())
}

pub(crate) fn tokenized_json(t: Tokenized) -> Value {
    match t {
        Tokenized::Token(view) => {
            serde_json::to_value(TokenResponse::from(*view)).unwrap_or(Value::Null)
        }
        Tokenized::Id(id) => Value::String(id),
        Tokenized::Array(items) => Value::Array(items.into_iter().map(tokenized_json).collect()),
        Tokenized::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(k, v)| (k, tokenized_json(v)))
                .collect(),
        ),
        Tokenized::Keep(v) => v,
    }
}

/// Tokenize any JSON: objects with `type` and `data` become tokens, other scalars `token`s.
#[utoipa::path(post, path = "/tokenize", tag = "tokens", request_body = Object,
    responses((status = 200, body = Object), (status = 400, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn tokenize(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    Json(body): Json<Value>,
) -> Result<HttpResponse> {
    let out = vault.tokens.tokenize(&caller, body).await?;
    Ok(HttpResponse::Ok().json(tokenized_json(out)))
}

/// Replace `{{ id }}` expressions in any JSON with the data the caller may read.
#[utoipa::path(post, path = "/detokenize", tag = "tokens", request_body = Object,
    responses((status = 200, body = Object), (status = 400, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn detokenize(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    Json(body): Json<Value>,
) -> Result<HttpResponse> {
    let out = vault.tokens.detokenize(&caller, body).await?;
    Ok(HttpResponse::Ok().json(out))
}

/// Link a child token to a parent.
#[utoipa::path(post, path = "/tokens/{parent_id}/children/{child_id}", tag = "tokens",
    params(("parent_id" = String, Path), ("child_id" = String, Path)),
    responses((status = 204), (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem)),
    security(("api_key" = [])))]
pub async fn associate(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse> {
    let (parent, child) = path.into_inner();
    vault.tokens.associate(&caller, &parent, &child).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Remove a parent → child link.
#[utoipa::path(delete, path = "/tokens/{parent_id}/children/{child_id}", tag = "tokens",
    params(("parent_id" = String, Path), ("child_id" = String, Path)),
    responses((status = 204), (status = 403, body = Problem), (status = 404, body = Problem)),
    security(("api_key" = [])))]
pub async fn dissociate(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse> {
    let (parent, child) = path.into_inner();
    vault.tokens.dissociate(&caller, &parent, &child).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Create a token as a child of a parent.
#[utoipa::path(post, path = "/tokens/{parent_id}/children", tag = "tokens",
    params(("parent_id" = String, Path)), request_body = CreateTokenRequest,
    responses((status = 201, body = TokenResponse), (status = 400, body = Problem), (status = 403, body = Problem),
              (status = 404, body = Problem)),
    security(("api_key" = [])))]
pub async fn create_child(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    parent: web::Path<String>,
    Json(body): Json<Value>,
) -> Result<HttpResponse> {
    let view = vault
        .tokens
        .create_child(&caller, &parent, raw_token(body)?)
        .await?;
    Ok(HttpResponse::Created().json(TokenResponse::from(view)))
}

/// List a parent's children.
#[utoipa::path(get, path = "/tokens/{parent_id}/children", tag = "tokens",
    params(("parent_id" = String, Path), ("id" = Option<Vec<String>>, Query), ("type" = Option<Vec<String>>, Query),
           ("page" = Option<u64>, Query), ("size" = Option<u64>, Query)),
    responses((status = 200, body = Paginated<TokenResponse>), (status = 403, body = Problem), (status = 404, body = Problem)),
    security(("api_key" = [])))]
pub async fn children(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    parent: web::Path<String>,
    query: QueryParams,
) -> Result<HttpResponse> {
    let mut filter = filter_from(&query)?;
    filter.parent = Some(parent.into_inner());
    let page = vault
        .tokens
        .list_tokens(&caller, filter, query.page()?)
        .await?;
    Ok(HttpResponse::Ok().json(Paginated::from_page(page, TokenResponse::from)))
}

/// Registers the routes.
/// `POST /tokens` and `POST /tokenize` answer browsers (`browser`, docs/decisions.md §11).
pub fn configure(cfg: &mut web::ServiceConfig, browser: &BrowserCors) {
    // One scope: the router (and the metrics' route label) tries these patterns only for paths
    // under `/tokens`, the single token (the hottest) first.
    cfg.service(
        web::scope("/tokens")
            .service(
                resource!("/tokens", "")
                    .wrap(browser.middleware())
                    .route(web::post().to(create))
                    .route(web::get().to(list)),
            )
            .service(
                resource!("/tokens", "/{id}")
                    .route(web::get().to(get))
                    .route(web::patch().to(update))
                    .route(web::delete().to(delete)),
            )
            .service(
                resource!("/tokens", "/{parent_id}/children")
                    .route(web::post().to(create_child))
                    .route(web::get().to(children)),
            )
            .service(
                resource!("/tokens", "/{parent_id}/children/{child_id}")
                    .route(web::post().to(associate))
                    .route(web::delete().to(dissociate)),
            ),
    )
    .service(
        resource!("/tokenize")
            .wrap(browser.middleware())
            .route(web::post().to(tokenize)),
    )
    .service(
        resource!("/detokenize")
            .app_data(NeverReplayed)
            .route(web::post().to(detokenize)),
    );
}
