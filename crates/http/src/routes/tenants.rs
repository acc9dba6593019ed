//! `/tenants/self`: the tenant of the request's key.

use actix_web::{HttpResponse, web};
use tokenvault_domain::Vault;
use tokenvault_domain::error::Error;

use crate::dto::{TenantResponse, UpdateTenantRequest};
use crate::extract::Caller;
use crate::json_body::Json;
use crate::problem::{ApiError, Problem};
use crate::query::QueryParams;

type Result<T> = std::result::Result<T, ApiError>;

/// Read the tenant.
#[utoipa::path(get, path = "/tenants/self", tag = "tenants",
    responses((status = 200, body = TenantResponse), (status = 401, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn get(vault: web::Data<Vault>, Caller(caller): Caller) -> Result<HttpResponse> {
    let tenant = vault.tenants.get_tenant(&caller).await?;
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
    let tenant = vault.tenants.update_tenant(&caller, body.into()).await?;
    Ok(HttpResponse::Ok().json(TenantResponse::from(tenant)))
}

/// Delete the tenant and everything it owns; its keys stop working at once.
#[utoipa::path(delete, path = "/tenants/self", tag = "tenants",
    responses((status = 204), (status = 401, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn delete(vault: web::Data<Vault>, Caller(caller): Caller) -> Result<HttpResponse> {
    vault.tenants.delete_tenant(&caller).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Registers the routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        resource!("/tenants/self")
            .route(web::get().to(get))
            .route(web::put().to(update))
            .route(web::delete().to(delete)),
    )
    .service(resource!("/tenants/self/reports/usage").route(web::get().to(usage)));
}

/// Included monthly active tokens of the billing plan (configuration).
#[derive(Clone, Copy, Debug)]
pub struct IncludedTokens(pub u64);

/// Token Type Metrics.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct TypeMetrics {
    /// Live tokens of the type.
    pub count: u64,
    /// Newest creation (RFC 3339 UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_created_at: Option<String>,
}

/// Token Report.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct TokenReport {
    /// Per token type.
    pub metrics_by_type: std::collections::BTreeMap<String, TypeMetrics>,
    /// Included in the billing plan.
    pub included_monthly_active_tokens: u64,
    /// Distinct tokens created, read or used this UTC month.
    pub monthly_active_tokens: u64,
}

/// Tenant Usage Report.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct UsageReport {
    /// The token report.
    pub token_report: TokenReport,
    /// With `months`: the monthly active tokens of the last `months` UTC months, oldest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monthly_active_tokens_by_month: Option<Vec<MonthActivity>>,
}

/// One month's active tokens.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct MonthActivity {
    /// `YYYY-MM` (UTC).
    pub month: String,
    /// Distinct tokens created, read or updated in it.
    pub monthly_active_tokens: u64,
}

/// The tenant's usage report.
#[utoipa::path(get, path = "/tenants/self/reports/usage", tag = "tenants",
    params(("months" = Option<u32>, Query, description = "1 to 24: adds the monthly active tokens of that many months")),
    responses((status = 200, body = UsageReport), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn usage(
    vault: web::Data<Vault>,
    included: web::Data<IncludedTokens>,
    Caller(caller): Caller,
    query: QueryParams,
) -> Result<HttpResponse> {
    let months = match query.first("months") {
        None => None,
        Some(raw) => Some(raw.parse::<u32>().map_err(|_| {
            ApiError::from(Error::invalid(
                "months",
                "must be a number between 1 and 24",
            ))
        })?),
    };
    let report = vault.usage.usage_report(&caller).await?;
    let history = match months {
        Some(months) => Some(vault.usage.usage_history(&caller, months).await?),
        None => None,
    };
    Ok(HttpResponse::Ok().json(UsageReport {
        monthly_active_tokens_by_month: history.map(|months| {
            months
                .into_iter()
                .map(|(month, monthly_active_tokens)| MonthActivity {
                    month,
                    monthly_active_tokens,
                })
                .collect()
        }),
        token_report: TokenReport {
            metrics_by_type: report
                .by_type
                .into_iter()
                .map(|c| {
                    (
                        c.token_type,
                        TypeMetrics {
                            count: c.count,
                            last_created_at: c.last_created_at.map(crate::dto::format_time),
                        },
                    )
                })
                .collect(),
            included_monthly_active_tokens: included.0,
            monthly_active_tokens: report.monthly_active_tokens,
        },
    }))
}
