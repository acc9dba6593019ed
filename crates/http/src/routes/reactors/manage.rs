//! `/reactors`: a reactor's wire form and its create, list, read, replace and delete.

use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokenvault_domain::Vault;
use tokenvault_domain::service::{RawReactor, ReactorView};
use utoipa::ToSchema;
use uuid::Uuid;

use super::Result;
use super::formulas::FormulaResponse;
use crate::dto::{ApplicationResponse, Paginated, format_time};
use crate::extract::Caller;
use crate::json_body::Json;
use crate::problem::Problem;
use crate::query::{ListQuery, QueryParams, path_uuid};

/// `{ "id": … }`, as `formula` and `application` are given.
#[derive(Debug, Deserialize, ToSchema)]
pub struct IdRef {
    /// The identifier.
    pub id: Option<String>,
}

/// `POST`/`PUT /reactors`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ReactorRequest {
    /// 1..=200 characters.
    pub name: Option<String>,
    /// Values for the formula's declared configuration.
    #[schema(value_type = Object)]
    pub configuration: Option<Value>,
    /// `{id}` of the formula (create only; fixed afterwards).
    pub formula: Option<IdRef>,
    /// `{id}` of a public or private application `svc` and `tokenize` act as.
    pub application: Option<IdRef>,
}

impl ReactorRequest {
    fn into_domain(self) -> RawReactor {
        RawReactor {
            name: self.name,
            configuration: self.configuration,
            formula_id: self.formula.and_then(|f| f.id),
            application_id: self.application.and_then(|a| a.id),
        }
    }
}

/// A reactor, with its whole formula and its application (never a key).
#[derive(Debug, Serialize, ToSchema)]
pub struct ReactorResponse {
    /// Identifier.
    pub id: Uuid,
    /// Owning tenant.
    pub tenant_id: Uuid,
    /// Name.
    pub name: String,
    /// Its formula.
    pub formula: FormulaResponse,
    /// Configuration values.
    #[schema(value_type = Object)]
    pub configuration: Value,
    /// Its application, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub application: Option<ApplicationResponse>,
    /// Creating application.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_by: Option<Uuid>,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// Last modifying application.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_by: Option<Uuid>,
    /// RFC 3339 UTC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_at: Option<String>,
}

impl From<ReactorView> for ReactorResponse {
    fn from(v: ReactorView) -> Self {
        let r = v.reactor;
        Self {
            id: r.id,
            tenant_id: r.tenant_id,
            name: r.name,
            formula: v.formula.into(),
            configuration: Value::Object(r.configuration),
            application: v.application.map(|a| ApplicationResponse::new(a, None)),
            created_by: r.created_by,
            created_at: format_time(r.created_at),
            modified_by: r.modified_by,
            modified_at: r.modified_at.map(format_time),
        }
    }
}

/// Create a reactor of a formula.
#[utoipa::path(post, path = "/reactors", tag = "reactors", request_body = ReactorRequest,
    responses((status = 201, body = ReactorResponse), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn create(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    Json(body): Json<ReactorRequest>,
) -> Result<HttpResponse> {
    let view = vault
        .reactors
        .create_reactor(&caller, body.into_domain())
        .await?;
    Ok(HttpResponse::Created().json(ReactorResponse::from(view)))
}

/// List reactors, newest first; `id` (repeatable) and `name` (contains, any case) filter.
#[utoipa::path(get, path = "/reactors", tag = "reactors",
    params(("id" = Option<Vec<Uuid>>, Query), ("name" = Option<String>, Query),
           ("page" = Option<u64>, Query), ("size" = Option<u64>, Query)),
    responses((status = 200, body = Paginated<ReactorResponse>), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn list(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    query: QueryParams,
) -> Result<HttpResponse> {
    let ListQuery { ids, name, page } = ListQuery::read(&query)?;
    let page = vault
        .reactors
        .list_reactors(&caller, &ids, name.as_deref(), page)
        .await?;
    Ok(HttpResponse::Ok().json(Paginated::from_page(page, ReactorResponse::from)))
}

/// Read a reactor.
#[utoipa::path(get, path = "/reactors/{id}", tag = "reactors", params(("id" = Uuid, Path)),
    responses((status = 200, body = ReactorResponse), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)),
    security(("api_key" = [])))]
pub async fn get(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse> {
    let id = path_uuid("id", &id)?;
    let view = vault.reactors.get_reactor(&caller, id).await?;
    Ok(HttpResponse::Ok().json(ReactorResponse::from(view)))
}

/// Replace a reactor's name, configuration and application (the formula stays).
#[utoipa::path(put, path = "/reactors/{id}", tag = "reactors", params(("id" = Uuid, Path)),
    request_body = ReactorRequest,
    responses((status = 200, body = ReactorResponse), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)),
    security(("api_key" = [])))]
pub async fn update(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    id: web::Path<String>,
    Json(body): Json<ReactorRequest>,
) -> Result<HttpResponse> {
    let id = path_uuid("id", &id)?;
    let view = vault
        .reactors
        .update_reactor(&caller, id, body.into_domain())
        .await?;
    Ok(HttpResponse::Ok().json(ReactorResponse::from(view)))
}

/// Delete a reactor.
#[utoipa::path(delete, path = "/reactors/{id}", tag = "reactors", params(("id" = Uuid, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)),
    security(("api_key" = [])))]
pub async fn delete(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse> {
    let id = path_uuid("id", &id)?;
    vault.reactors.delete_reactor(&caller, id).await?;
    Ok(HttpResponse::NoContent().finish())
}
