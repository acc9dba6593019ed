//! `POST /reactors/{id}/react`: a reactor's invocation and what it returns.

use actix_web::{HttpResponse, web};
use serde::Serialize;
use serde_json::Value;
use tokenvault_domain::Vault;
use tokenvault_domain::service::ReactResult;
use utoipa::ToSchema;

use super::Result;
use crate::dto::ReactRequest;
use crate::extract::CallerReacting;
use crate::problem::{Problem, current_trace_id};
use crate::query::path_uuid;
use crate::routes::tokens::tokenized_json;

/// What an invocation returns.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReactResponse {
    /// Tokens made from the code's `tokenize` block.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub tokens: Option<Value>,
    /// What the code returned as `raw`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub raw: Option<Value>,
}

impl From<ReactResult> for ReactResponse {
    fn from(r: ReactResult) -> Self {
        Self {
            tokens: r.tokens.map(tokenized_json),
            raw: r.raw,
        }
    }
}

/// Invoke a reactor: `token:use`, and on every detokenized token's container.
#[utoipa::path(post, path = "/reactors/{id}/react", tag = "reactors", params(("id" = Uuid, Path)),
    request_body = ReactRequest,
    responses((status = 200, body = ReactResponse), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem),
              (status = 422, description = "the formula's code does not compile", body = Problem),
              (status = 500, body = Problem)),
    security(("api_key" = [])))]
pub async fn react(
    vault: web::Data<Vault>,
    CallerReacting(caller, prefetched, args): CallerReacting,
    id: web::Path<String>,
) -> Result<HttpResponse> {
    let id = path_uuid("id", &id)?;
    let args = args?;
    let result = vault
        .reactors
        .react(&caller, id, args, current_trace_id(), prefetched)
        .await?;
    Ok(HttpResponse::Ok().json(ReactResponse::from(result)))
}
