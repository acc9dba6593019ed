//! `GET /permissions`: the permissions an application of a type may hold (docs/decisions.md
//! §12), for any application's key (a session key is a 403, as everywhere but tokens).

use actix_web::HttpResponse;
use serde::Serialize;
use tokenvault_domain::permission::{ApplicationType, Permission};
use utoipa::ToSchema;

use crate::extract::Caller;
use crate::problem::{ApiError, Problem};
use crate::query::QueryParams;

/// A permission, what it allows, and which application types may hold it.
#[derive(Debug, Serialize, ToSchema)]
pub struct PermissionResponse {
    /// The permission's name (`token:read`).
    #[serde(rename = "type")]
    pub permission: &'static str,
    /// What holding it allows.
    pub description: &'static str,
    /// The application types that may hold it.
    pub application_types: Vec<&'static str>,
}

/// The permissions an application of `application_type` may hold (every permission without
/// it).
#[utoipa::path(get, path = "/permissions", tag = "applications",
    params(("application_type" = Option<String>, Query, description = "private, public or management")),
    responses((status = 200, body = Vec<PermissionResponse>), (status = 400, body = Problem),
              (status = 401, body = Problem)),
    security(("api_key" = [])))]
pub async fn list(Caller(caller): Caller, query: QueryParams) -> Result<HttpResponse, ApiError> {
    // A session key holds token permissions only: every other endpoint answers it 403
    // (docs/decisions.md §4).
    if caller.session.is_some() {
        return Err(tokenvault_domain::Error::Forbidden.into());
    }
    let wanted = match query.first("application_type") {
        None => None,
        Some(raw) => Some(ApplicationType::parse(raw).ok_or_else(|| {
            ApiError::invalid("application_type", "must be private, public or management")
        })?),
    };
    let body: Vec<PermissionResponse> = Permission::ALL
        .iter()
        .filter(|p| wanted.is_none_or(|t| p.allowed_for(t)))
        .map(|p| PermissionResponse {
            permission: p.as_str(),
            description: p.description(),
            application_types: p
                .application_types()
                .into_iter()
                .map(ApplicationType::as_str)
                .collect(),
        })
        .collect();
    Ok(HttpResponse::Ok().json(body))
}

/// Registers the route.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    cfg.service(resource!("/permissions").route(actix_web::web::get().to(list)));
}
