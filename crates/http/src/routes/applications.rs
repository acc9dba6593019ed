//! `/applications`: the seven endpoints of the interface.

use actix_web::{HttpResponse, web};
use tokenvault_domain::Vault;

use crate::dto::{
    ApplicationResponse, CreateApplicationRequest, Paginated, UpdateApplicationRequest,
};
use crate::extract::Caller;
use crate::json_body::Json;
use crate::problem::{ApiError, Problem};
use crate::query::{ListQuery, QueryParams, path_uuid};

type Result<T> = std::result::Result<T, ApiError>;

/// Create an application; the response carries its key, shown only this once.
#[utoipa::path(post, path = "/applications", tag = "applications",
    request_body = CreateApplicationRequest,
    responses((status = 201, body = ApplicationResponse), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn create(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    Json(body): Json<CreateApplicationRequest>,
) -> Result<HttpResponse> {
    let (app, key) = vault
        .applications
        .create_application(&caller, body.into_domain()?)
        .await?;
    Ok(HttpResponse::Created().json(ApplicationResponse::new(app, Some(&key))))
}

/// List the tenant's applications, newest first, optionally only the given `id`s.
#[utoipa::path(get, path = "/applications", tag = "applications",
    params(("id" = Option<Vec<uuid::Uuid>>, Query, description = "repeatable"),
           ("page" = Option<u64>, Query), ("size" = Option<u64>, Query)),
    responses((status = 200, body = Paginated<ApplicationResponse>), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn list(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    query: QueryParams,
) -> Result<HttpResponse> {
    let ListQuery { ids, page, .. } = ListQuery::read(&query)?;
    let page = vault
        .applications
        .list_applications(&caller, &ids, page)
        .await?;
    Ok(HttpResponse::Ok().json(Paginated::from_page(page, |a| {
        ApplicationResponse::new(a, None)
    })))
}

/// Read one application.
#[utoipa::path(get, path = "/applications/{id}", tag = "applications",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 200, body = ApplicationResponse), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)),
    security(("api_key" = [])))]
pub async fn get(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse> {
    let id = path_uuid("id", &id)?;
    let app = vault.applications.get_application(&caller, id).await?;
    Ok(HttpResponse::Ok().json(ApplicationResponse::new(app, None)))
}

/// The application of the request's own API key.
#[utoipa::path(get, path = "/applications/key", tag = "applications",
    responses((status = 200, body = ApplicationResponse), (status = 401, body = Problem),
              (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn by_key(vault: web::Data<Vault>, Caller(caller): Caller) -> Result<HttpResponse> {
    let app = vault.applications.own_application(&caller).await?;
    Ok(HttpResponse::Ok().json(ApplicationResponse::new(app, None)))
}

/// Replace an application's name, permissions and rules.
#[utoipa::path(put, path = "/applications/{id}", tag = "applications",
    params(("id" = uuid::Uuid, Path)), request_body = UpdateApplicationRequest,
    responses((status = 200, body = ApplicationResponse), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)),
    security(("api_key" = [])))]
pub async fn update(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    id: web::Path<String>,
    Json(body): Json<UpdateApplicationRequest>,
) -> Result<HttpResponse> {
    let id = path_uuid("id", &id)?;
    let app = vault
        .applications
        .update_application(&caller, id, body.into())
        .await?;
    Ok(HttpResponse::Ok().json(ApplicationResponse::new(app, None)))
}

/// Issue a new key; the old one stops working at once.
#[utoipa::path(post, path = "/applications/{id}/regenerate", tag = "applications",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 200, body = ApplicationResponse), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)),
    security(("api_key" = [])))]
pub async fn regenerate(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse> {
    let id = path_uuid("id", &id)?;
    let (app, key) = vault.applications.regenerate_key(&caller, id).await?;
    Ok(HttpResponse::Ok().json(ApplicationResponse::new(app, Some(&key))))
}

/// Delete an application; its key stops working.
#[utoipa::path(delete, path = "/applications/{id}", tag = "applications",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)),
    security(("api_key" = [])))]
pub async fn delete(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse> {
    let id = path_uuid("id", &id)?;
    vault.applications.delete_application(&caller, id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Registers the routes (`/applications/key` before `/applications/{id}`), in one scope: the
/// router (and the metrics' route label) tries their patterns only for paths under it.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/applications")
            .service(
                resource!("/applications", "")
                    .route(web::post().to(create))
                    .route(web::get().to(list)),
            )
            .service(resource!("/applications", "/key").route(web::get().to(by_key)))
            .service(
                resource!("/applications", "/{id}")
                    .route(web::get().to(get))
                    .route(web::put().to(update))
                    .route(web::delete().to(delete)),
            )
            .service(
                resource!("/applications", "/{id}/regenerate").route(web::post().to(regenerate)),
            ),
    );
}
