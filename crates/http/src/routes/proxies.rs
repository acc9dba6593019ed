//! `/proxies` CRUD and invocation on `/proxy` and `/proxy/{tail…}` (docs/decisions.md §8).

use actix_web::http::StatusCode;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokenvault_domain::Vault;
use tokenvault_domain::proxy::ProxyView;
use tokenvault_domain::service::{ProxyCall, ProxyReply, RawProxy, RawTransform};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::BodyLimit;
use crate::dto::{Paginated, format_time};
use crate::extract::Caller;
use crate::idempotency::NeverReplayed;
use crate::json_body::{BODY_TIMEOUT, Json, body_too_slow};
use crate::limit::RateLimit;
use crate::metrics::Metrics;
use crate::problem::{ApiError, Problem, TenantResponse, current_trace_id};
use crate::query::{ListQuery, QueryParams, path_uuid};
use crate::routes::reactors::IdRef;

type Result<T> = std::result::Result<T, ApiError>;

/// The header and the query parameter that select a proxy.
const PROXY_KEY_HEADER: &str = "svc-proxy-key";

/// A transform: CommonJS code run on the request (after detokenization) or on a 2xx response.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct Transform {
    /// `module.exports = async function (req) { … return { body, headers }; }` (at most
    /// 50,000 characters; must compile).
    pub code: Option<String>,
}

/// `POST`/`PUT /proxies` (a PUT replaces every field).
#[derive(Debug, Deserialize, ToSchema)]
pub struct ProxyRequest {
    /// 1..=200 characters.
    pub name: Option<String>,
    /// Absolute https URL (http only where the server allows it), at most 400 characters.
    pub destination_url: Option<String>,
    /// Code run on the request before it is forwarded.
    pub request_transform: Option<Transform>,
    /// Code run on 2xx responses of the destination.
    pub response_transform: Option<Transform>,
    /// `{id}` of a public or private application: transforms' `svc`, and detokenization when
    /// `require_auth` is false.
    pub application: Option<IdRef>,
    /// Strings given to transform code (at most 25 entries).
    #[schema(value_type = Option<Object>)]
    pub configuration: Option<Value>,
    /// Whether callers need an API key holding `token:use` (default true).
    pub require_auth: Option<bool>,
}

fn transform(t: Option<Transform>) -> Option<RawTransform> {
    t.map(|t| RawTransform { code: t.code })
}

impl ProxyRequest {
    fn into_domain(self) -> RawProxy {
        RawProxy {
            name: self.name,
            destination_url: self.destination_url,
            request_transform: transform(self.request_transform),
            response_transform: transform(self.response_transform),
            application_id: self.application.and_then(|a| a.id),
            configuration: self.configuration,
            require_auth: self.require_auth,
        }
    }
}

/// A proxy.
#[derive(Serialize, ToSchema)]
pub struct ProxyResponse {
    /// Identifier.
    pub id: Uuid,
    /// Owning tenant.
    pub tenant_id: Uuid,
    /// Name.
    pub name: String,
    /// Selects the proxy (header `SVC-PROXY-KEY` or query `svc-proxy-key`).
    pub key: String,
    /// Where requests go.
    pub destination_url: String,
    /// Whether callers need an API key holding `token:use`.
    pub require_auth: bool,
    /// Request transform, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_transform: Option<Transform>,
    /// Response transform, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_transform: Option<Transform>,
    /// The application transforms act as, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub application_id: Option<Uuid>,
    /// Strings given to transform code.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub configuration: Option<Value>,
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

impl std::fmt::Debug for ProxyResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is a credential of proxies without require_auth.
        f.debug_struct("ProxyResponse")
            .field("id", &self.id)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl From<ProxyView> for ProxyResponse {
    fn from(v: ProxyView) -> Self {
        let p = v.proxy;
        Self {
            id: p.id,
            tenant_id: p.tenant_id,
            name: p.name,
            key: v.key.expose().to_string(),
            destination_url: p.destination_url,
            require_auth: p.require_auth,
            request_transform: p
                .request_transform
                .map(|code| Transform { code: Some(code) }),
            response_transform: p
                .response_transform
                .map(|code| Transform { code: Some(code) }),
            application_id: p.application_id,
            configuration: p.configuration.map(|c| {
                Value::Object(c.into_iter().map(|(k, v)| (k, Value::String(v))).collect())
            }),
            created_by: p.created_by,
            created_at: format_time(p.created_at),
            modified_by: p.modified_by,
            modified_at: p.modified_at.map(format_time),
        }
    }
}

/// Create a proxy. Transforms are stored as given; one that does not compile fails the
/// invocation with a 422 `proxy_error`.
#[utoipa::path(post, path = "/proxies", tag = "proxies", request_body = ProxyRequest,
    responses((status = 201, body = ProxyResponse), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn create(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    Json(body): Json<ProxyRequest>,
) -> Result<HttpResponse> {
    let proxy = vault
        .proxies
        .create_proxy(&caller, body.into_domain())
        .await?;
    Ok(HttpResponse::Created().json(ProxyResponse::from(proxy)))
}

/// List proxies, newest first; `id` (repeatable) and `name` (contains, any case) filter.
#[utoipa::path(get, path = "/proxies", tag = "proxies",
    params(("id" = Option<Vec<Uuid>>, Query), ("name" = Option<String>, Query),
           ("page" = Option<u64>, Query), ("size" = Option<u64>, Query)),
    responses((status = 200, body = Paginated<ProxyResponse>), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn list(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    query: QueryParams,
) -> Result<HttpResponse> {
    let ListQuery { ids, name, page } = ListQuery::read(&query)?;
    let page = vault
        .proxies
        .list_proxies(&caller, &ids, name.as_deref(), page)
        .await?;
    Ok(HttpResponse::Ok().json(Paginated::from_page(page, ProxyResponse::from)))
}

/// Read a proxy.
#[utoipa::path(get, path = "/proxies/{id}", tag = "proxies", params(("id" = Uuid, Path)),
    responses((status = 200, body = ProxyResponse), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)),
    security(("api_key" = [])))]
pub async fn get(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse> {
    let id = path_uuid("id", &id)?;
    let proxy = vault.proxies.get_proxy(&caller, id).await?;
    Ok(HttpResponse::Ok().json(ProxyResponse::from(proxy)))
}

/// Replace a proxy's fields (its key stays).
#[utoipa::path(put, path = "/proxies/{id}", tag = "proxies", params(("id" = Uuid, Path)),
    request_body = ProxyRequest,
    responses((status = 200, body = ProxyResponse), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)),
    security(("api_key" = [])))]
pub async fn update(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    id: web::Path<String>,
    Json(body): Json<ProxyRequest>,
) -> Result<HttpResponse> {
    let id = path_uuid("id", &id)?;
    let proxy = vault
        .proxies
        .update_proxy(&caller, id, body.into_domain())
        .await?;
    Ok(HttpResponse::Ok().json(ProxyResponse::from(proxy)))
}

/// Delete a proxy; its key stops working at once.
#[utoipa::path(delete, path = "/proxies/{id}", tag = "proxies", params(("id" = Uuid, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 404, body = Problem)),
    security(("api_key" = [])))]
pub async fn delete(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse> {
    let id = path_uuid("id", &id)?;
    vault.proxies.delete_proxy(&caller, id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// A vault error on a proxy call: `{"proxy_error": <problem>}` with the problem's status, as
/// `application/json`; a `CustomHttpResponseError` of a transform is answered as given.
fn proxy_error(err: ApiError) -> HttpResponse {
    let mut response = err.error_response();
    if response.extensions().get::<TenantResponse>().is_some() {
        return response;
    }
    let body = serde_json::json!({ "proxy_error": err.problem_body() });
    let mut builder = HttpResponse::build(err.status());
    if let Some(seconds) = err.retry_after() {
        builder.insert_header(("Retry-After", seconds.to_string()));
    }
    response = builder
        .content_type("application/json")
        .body(body.to_string());
    response.extensions_mut().insert(TenantResponse);
    response
}

/// Invoke a proxy: any method on `/proxy` and `/proxy/{tail}`. The body's `{{ id }}` and
/// `{{ id | json: '$.path' }}` expressions are replaced by token data on the way out; the
/// destination's answer comes back as it is, with `SVC-PROXY-DESTINATION-STATUS`. The vault's
/// own errors are `{"proxy_error": <problem>}`.
#[utoipa::path(post, path = "/proxy/{tail}", tag = "proxies",
    params(("tail" = String, Path), ("SVC-PROXY-KEY" = Option<String>, Header),
           ("svc-proxy-key" = Option<String>, Query)),
    responses((status = 200, description = "The destination's answer, whatever its status"),
              (status = 400, description = "proxy_error"), (status = 401, description = "proxy_error"),
              (status = 403, description = "proxy_error"), (status = 413, description = "proxy_error"),
              (status = 422, description = "proxy_error: a transform does not compile"),
              (status = 429, description = "proxy_error: rate limited"),
              (status = 502, description = "proxy_error"),
              (status = 504, description = "proxy_error")),
    security(("api_key" = [])))]
pub async fn invoke(
    vault: web::Data<Vault>,
    metrics: web::Data<Metrics>,
    request: HttpRequest,
    payload: web::Payload,
) -> HttpResponse {
    // Read here rather than by an extractor, so that a body over the limit is a proxy_error
    // like every other failure of the vault on this route.
    let limit = request
        .app_data::<web::Data<BodyLimit>>()
        .map_or(usize::MAX, |l| l.0);
    let Ok(read) = tokio::time::timeout(BODY_TIMEOUT, payload.to_bytes_limited(limit)).await else {
        return proxy_error(body_too_slow());
    };
    let body = match read {
        Ok(Ok(body)) => body,
        Ok(Err(_)) => {
            return proxy_error(ApiError::new(
                StatusCode::BAD_REQUEST,
                "The request body could not be read.",
            ));
        }
        Err(_) => {
            return proxy_error(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "The request body is larger than the limit.",
            ));
        }
    };
    let tail = request
        .match_info()
        .get("tail")
        .unwrap_or_default()
        .to_string();
    let mut proxy_key = None;
    let mut query = Vec::new();
    for (name, value) in form_urlencoded::parse(request.query_string().as_bytes()) {
        if name.eq_ignore_ascii_case(PROXY_KEY_HEADER) {
            proxy_key.get_or_insert_with(|| value.into_owned());
        } else {
            query.push((name.into_owned(), value.into_owned()));
        }
    }
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    if let Some(key) = header(PROXY_KEY_HEADER) {
        proxy_key = Some(key);
    }
    // Counted before anything is read for the call: under the caller's API key when it sends
    // one (a key that fails authentication spends only its own allowance, never the proxy's),
    // else under the proxy key the call names.
    let counted = match (header("svc-api-key"), &proxy_key) {
        (Some(api_key), _) => Some(RateLimit::keyed("api-key", &api_key)),
        (None, Some(key)) => Some(RateLimit::keyed("proxy", key)),
        (None, None) => None,
    };
    if let (Some(limit), Some(counted)) = (request.app_data::<web::Data<RateLimit>>(), counted)
        && let Err(refused) = limit.check(counted)
    {
        metrics.proxy_call(None);
        return proxy_error(refused);
    }
    let headers = request
        .headers()
        .iter()
        .filter_map(|(n, v)| Some((n.as_str().to_string(), v.to_str().ok()?.to_string())))
        .collect();
    let call = ProxyCall {
        proxy_key,
        api_key: header("svc-api-key"),
        method: request.method().as_str().to_ascii_uppercase(),
        tail,
        query,
        headers,
        body: body.to_vec(),
        trace_id: current_trace_id(),
    };
    match vault.proxies.invoke_proxy(call).await {
        Ok(reply) => {
            metrics.proxy_call(Some(reply.destination_status));
            reply_response(reply)
        }
        Err(e) => {
            metrics.proxy_call(None);
            proxy_error(ApiError::from(e))
        }
    }
}

fn reply_response(reply: ProxyReply) -> HttpResponse {
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut response = HttpResponse::build(status);
    for (name, value) in &reply.headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::try_from(name.as_str()),
            HeaderValue::try_from(value.as_str()),
        ) {
            response.append_header((n, v));
        }
    }
    response.insert_header((
        "svc-proxy-destination-status",
        reply.destination_status.to_string(),
    ));
    let mut built = response.body(reply.body);
    // The destination's answer, not the vault's: never rewritten into a problem.
    built.extensions_mut().insert(TenantResponse);
    built
}

/// Registers the routes, a scope per resource (the router tries the patterns of one only).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/proxies")
            .service(
                resource!("/proxies", "")
                    .route(web::post().to(create))
                    .route(web::get().to(list)),
            )
            .service(
                resource!("/proxies", "/{id}")
                    .route(web::get().to(get))
                    .route(web::put().to(update))
                    .route(web::delete().to(delete)),
            ),
    )
    .service(
        web::scope("/proxy")
            .service(
                resource!("/proxy", "")
                    .app_data(NeverReplayed)
                    .route(web::route().to(invoke)),
            )
            .service(
                resource!("/proxy", "/{tail:.*}")
                    .app_data(NeverReplayed)
                    .route(web::route().to(invoke)),
            ),
    );
}
