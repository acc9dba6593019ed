//! `/reactor-formulas`: a formula's wire form and its create, list, read, replace and delete.

use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};
use tokenvault_domain::Vault;
use tokenvault_domain::formula::{
    ConfigDeclaration, Formula, FormulaStatus, RawDeclaration, RawFormula, RequestParameter,
};
use utoipa::ToSchema;
use uuid::Uuid;

use super::Result;
use crate::dto::{Paginated, format_time};
use crate::extract::Caller;
use crate::json_body::Json;
use crate::problem::Problem;
use crate::query::{ListQuery, QueryParams, path_uuid};

/// A declared configuration value or request parameter.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct Declaration {
    /// Its name (request parameters: dots separate nesting levels).
    pub name: Option<String>,
    /// Free text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `string`, `number` or `boolean`.
    #[serde(rename = "type")]
    pub param_type: Option<String>,
    /// Request parameters only: whether it may be missing (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
}

impl Declaration {
    fn into_domain(self) -> RawDeclaration {
        RawDeclaration {
            name: self.name,
            description: self.description,
            param_type: self.param_type,
            optional: self.optional,
        }
    }
}

/// `POST`/`PUT /reactor-formulas`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct FormulaRequest {
    /// 1..=200 characters.
    pub name: Option<String>,
    /// Free text.
    pub description: Option<String>,
    /// `private` (the default and only type).
    #[serde(rename = "type")]
    pub formula_type: Option<String>,
    /// A CommonJS module: `module.exports = async function (req) { … }` (at most 50,000
    /// characters; must compile).
    pub code: Option<String>,
    /// Declared configuration values.
    pub configuration: Option<Vec<Declaration>>,
    /// Declared request parameters.
    pub request_parameters: Option<Vec<Declaration>>,
}

impl FormulaRequest {
    fn into_domain(self) -> RawFormula {
        RawFormula {
            name: self.name,
            description: self.description,
            formula_type: self.formula_type,
            code: self.code,
            configuration: self
                .configuration
                .unwrap_or_default()
                .into_iter()
                .map(Declaration::into_domain)
                .collect(),
            request_parameters: self
                .request_parameters
                .unwrap_or_default()
                .into_iter()
                .map(Declaration::into_domain)
                .collect(),
        }
    }
}

/// A reactor formula.
#[derive(Debug, Serialize, ToSchema)]
pub struct FormulaResponse {
    /// Identifier.
    pub id: Uuid,
    /// Owning tenant.
    pub tenant_id: Uuid,
    /// Name.
    pub name: String,
    /// Free text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `private`.
    #[serde(rename = "type")]
    pub formula_type: String,
    /// The module.
    pub code: String,
    /// Declared configuration values.
    pub configuration: Vec<Declaration>,
    /// Declared request parameters.
    pub request_parameters: Vec<Declaration>,
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
    /// `verified` when the code compiles as a module, `failed` when not (it is stored all the
    /// same; its invocations fail with a 422). Absent for a formula stored before the vault
    /// checked code and not updated since.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<&'static str>,
}

fn config_declaration(d: ConfigDeclaration) -> Declaration {
    Declaration {
        name: Some(d.name),
        description: d.description,
        param_type: Some(d.param_type.as_str().to_string()),
        optional: None,
    }
}

fn parameter_declaration(p: RequestParameter) -> Declaration {
    Declaration {
        name: Some(p.name),
        description: p.description,
        param_type: Some(p.param_type.as_str().to_string()),
        optional: Some(p.optional),
    }
}

impl From<Formula> for FormulaResponse {
    fn from(f: Formula) -> Self {
        Self {
            id: f.id,
            tenant_id: f.tenant_id,
            name: f.name,
            description: f.description,
            formula_type: f.formula_type,
            code: f.code,
            configuration: f
                .configuration
                .into_iter()
                .map(config_declaration)
                .collect(),
            request_parameters: f
                .request_parameters
                .into_iter()
                .map(parameter_declaration)
                .collect(),
            created_by: f.created_by,
            created_at: format_time(f.created_at),
            modified_by: f.modified_by,
            modified_at: f.modified_at.map(format_time),
            status: f.status.map(FormulaStatus::as_str),
        }
    }
}

/// Create a reactor formula. Its code is stored as given (over 50,000 characters: 400); code
/// that does not compile fails its invocation with a 422.
#[utoipa::path(post, path = "/reactor-formulas", tag = "reactors", request_body = FormulaRequest,
    responses((status = 201, body = FormulaResponse), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn create_formula(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    Json(body): Json<FormulaRequest>,
) -> Result<HttpResponse> {
    let formula = vault
        .reactors
        .create_formula(&caller, body.into_domain())
        .await?;
    Ok(HttpResponse::Created().json(FormulaResponse::from(formula)))
}

/// List formulas, newest first; `id` (repeatable) and `name` (contains, any case) filter.
#[utoipa::path(get, path = "/reactor-formulas", tag = "reactors",
    params(("id" = Option<Vec<Uuid>>, Query), ("name" = Option<String>, Query),
           ("page" = Option<u64>, Query), ("size" = Option<u64>, Query)),
    responses((status = 200, body = Paginated<FormulaResponse>), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn list_formulas(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    query: QueryParams,
) -> Result<HttpResponse> {
    let ListQuery { ids, name, page } = ListQuery::read(&query)?;
    let page = vault
        .reactors
        .list_formulas(&caller, &ids, name.as_deref(), page)
        .await?;
    Ok(HttpResponse::Ok().json(Paginated::from_page(page, FormulaResponse::from)))
}

/// Read a formula.
#[utoipa::path(get, path = "/reactor-formulas/{id}", tag = "reactors", params(("id" = Uuid, Path)),
    responses((status = 200, body = FormulaResponse), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)),
    security(("api_key" = [])))]
pub async fn get_formula(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse> {
    let id = path_uuid("id", &id)?;
    let formula = vault.reactors.get_formula(&caller, id).await?;
    Ok(HttpResponse::Ok().json(FormulaResponse::from(formula)))
}

/// Replace a formula (its code stored as given).
#[utoipa::path(put, path = "/reactor-formulas/{id}", tag = "reactors", params(("id" = Uuid, Path)),
    request_body = FormulaRequest,
    responses((status = 200, body = FormulaResponse), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)),
    security(("api_key" = [])))]
pub async fn update_formula(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    id: web::Path<String>,
    Json(body): Json<FormulaRequest>,
) -> Result<HttpResponse> {
    let id = path_uuid("id", &id)?;
    let formula = vault
        .reactors
        .update_formula(&caller, id, body.into_domain())
        .await?;
    Ok(HttpResponse::Ok().json(FormulaResponse::from(formula)))
}

/// Delete a formula (409 while a reactor uses it).
#[utoipa::path(delete, path = "/reactor-formulas/{id}", tag = "reactors", params(("id" = Uuid, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem)),
    security(("api_key" = [])))]
pub async fn delete_formula(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse> {
    let id = path_uuid("id", &id)?;
    vault.reactors.delete_formula(&caller, id).await?;
    Ok(HttpResponse::NoContent().finish())
}
