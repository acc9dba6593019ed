//! `/tenants/self`: the tenant of the request's key.

use actix_web::{HttpResponse, web};
use tokenvault_domain::Vault;

use crate::dto::{TenantResponse, UpdateTenantRequest};
use crate::extract::{Caller, Json};
use crate::problem::{ApiError, Problem};

type Result<T> = std::result::Result<T, ApiError>;

/// Read the tenant.
#[utoipa::path(get, path = "/tenants/self", tag = "tenants",
    responses((status = 200, body = TenantResponse), (status = 401, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn get(vault: web::Data<Vault>, Caller(caller): Caller) -> Result<HttpResponse> {
    let tenant = vault.get_tenant(&caller).await?;
    Ok(HttpResponse::Ok().json(TenantResponse::from(tenant)))
}

/// Rename the tenant and change the settings given.
#[utoipa::path(put, path = "/tenants/self", tag = "tenants", request_body = UpdateTenantRequest,
    responses((status = 200, body = TenantResponse), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn update(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    Json(body): Json<UpdateTenantRequest>,
) -> Result<HttpResponse> {
    let tenant = vault.update_tenant(&caller, body.into()).await?;
    Ok(HttpResponse::Ok().json(TenantResponse::from(tenant)))
}

/// Delete the tenant and everything it owns; its keys stop working at once.
#[utoipa::path(delete, path = "/tenants/self", tag = "tenants",
    responses((status = 204), (status = 401, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn delete(vault: web::Data<Vault>, Caller(caller): Caller) -> Result<HttpResponse> {
    vault.delete_tenant(&caller).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Registers the routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/tenants/self")
            .route(web::get().to(get))
            .route(web::put().to(update))
            .route(web::delete().to(delete)),
    );
}
