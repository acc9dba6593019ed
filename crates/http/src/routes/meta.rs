//! `/health` and the answer to a route that does not exist: no authentication (the OpenAPI
//! document is served by `openapi.rs`).

use actix_web::{HttpResponse, web};

use crate::dto::Health;
use crate::problem::{default_detail, problem_response};

/// Liveness: 200 while the server accepts requests.
#[utoipa::path(get, path = "/health", tag = "meta", responses((status = 200, body = Health)))]
pub async fn health() -> HttpResponse {
    HttpResponse::Ok().json(Health { status: "ok" })
}

/// Any route that does not exist.
pub async fn not_found() -> HttpResponse {
    let status = actix_web::http::StatusCode::NOT_FOUND;
    problem_response(status, default_detail(status), None)
}

/// Registers the routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(resource!("/health").route(web::get().to(health)));
}
