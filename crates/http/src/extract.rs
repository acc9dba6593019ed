//! Extractors: the authenticated caller, JSON bodies that name the bad field, list queries with
//! repeated parameters, and UUID path parameters.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::{FromRequest, HttpRequest, web};
use serde::de::DeserializeOwned;
use tokenvault_domain::application::ApiKey;
use tokenvault_domain::auth::Principal;
use tokenvault_domain::page::PageRequest;
use tokenvault_domain::service::{PrefetchedReactor, PrefetchedToken};
use tokenvault_domain::{ValidationErrors, Vault};
use uuid::Uuid;

use crate::dto::ReactRequest;
use crate::limit::RateLimit;
use crate::problem::ApiError;
use actix_web::HttpMessage as _;

/// The API key header.
pub const API_KEY_HEADER: &str = "svc-api-key";

/// The deepest JSON nesting accepted (docs/decisions.md §1).
pub const MAX_JSON_DEPTH: usize = 64;

/// A request already authenticated, its rate counted and room in its tenant's audit log waited
/// for, by the idempotency middleware: the route's extractor takes the caller from here instead
/// of asking the database again (and of waiting again).
#[derive(Clone, Debug)]
pub struct Authenticated(pub Principal);

/// The authenticated caller of a route (401 when the key is missing, unknown or expired).
pub struct Caller(pub Principal);

/// The caller's key from the request.
fn api_key(req: &HttpRequest) -> Option<String> {
    req.headers()
        .get(API_KEY_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn no_vault() -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "An unexpected error occurred.",
    )
}

/// What every authenticated request goes through once its principal is known (the idempotency
/// middleware does the same for the requests it takes): the trace id for the audit log, the
/// application's rate limit, the span's `application_id`, then room in its
/// tenant's audit log (a wait while it is behind; after the rate limit, so that a request over
/// its rate is refused at once and never takes a waiting place).
async fn admit(
    vault: &Vault,
    mut principal: Principal,
    limit: Option<&RateLimit>,
) -> Result<Principal, ApiError> {
    principal.trace_id = crate::problem::current_trace_id();
    if let Some(limit) = limit {
        limit.check(principal.application_id)?;
    }
    tracing::Span::current().record(
        "application_id",
        tracing::field::display(principal.application_id),
    );
    vault.auth.room(principal.tenant_id).await?;
    Ok(principal)
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        if let Some(Authenticated(mut principal)) = req.extensions().get::<Authenticated>().cloned()
        {
            principal.trace_id = crate::problem::current_trace_id();
            tracing::Span::current().record(
                "application_id",
                tracing::field::display(principal.application_id),
            );
            return Box::pin(async move { Ok(Caller(principal)) });
        }
        let vault = req.app_data::<web::Data<Vault>>().cloned();
        let limit = req.app_data::<web::Data<RateLimit>>().cloned();
        let key = api_key(req);
        Box::pin(async move {
            let vault = vault.ok_or_else(no_vault)?;
            let principal = vault.auth.authenticate(key.as_deref()).await?;
            let limit = limit.as_ref().map(web::Data::get_ref);
            Ok(Caller(admit(&vault, principal, limit).await?))
        })
    }
}

/// The caller of `GET /tokens/{id}` and, read in the same round trip as its key, the token the
/// path names ([`tokenvault_domain::service::Authenticator::authenticate_reading`]); the rate limit is counted before the token is
/// looked at, as for [`Caller`].
pub struct CallerReading(pub Principal, pub Option<PrefetchedToken>);

impl FromRequest for CallerReading {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let vault = req.app_data::<web::Data<Vault>>().cloned();
        let limit = req.app_data::<web::Data<RateLimit>>().cloned();
        let key = api_key(req);
        // Decoded as the handler's `web::Path<String>` decodes it, so the row read is the one
        // the handler asks for (otherwise it is only read twice).
        let id = web::Path::<String>::extract(req);
        Box::pin(async move {
            let id = id.await.map(web::Path::into_inner).unwrap_or_default();
            let vault = vault.ok_or_else(no_vault)?;
            let (principal, prefetched) =
                vault.auth.authenticate_reading(key.as_deref(), &id).await?;
            let limit = limit.as_ref().map(web::Data::get_ref);
            Ok(CallerReading(
                admit(&vault, principal, limit).await?,
                prefetched,
            ))
        })
    }
}

/// The caller of `POST /reactors/{id}/react`, what was read in the same round trip as its key
/// (the reactor the path names with its formula, and the token the arguments name:
/// [`tokenvault_domain::service::Authenticator::authenticate_reacting`]), and the request's
/// `args`. A body that has already arrived is read before the key is looked up, so its token can
/// be read with the key (a request without a well-formed key is refused first); one still
/// arriving is read once the caller is known. A body that cannot be read or parsed is the
/// handler's error, answered only once the caller is authenticated. A request the idempotency
/// middleware already authenticated reads the reactor in the use case instead.
pub struct CallerReacting(
    pub Principal,
    pub Option<PrefetchedReactor>,
    pub Result<Option<serde_json::Value>, ApiError>,
);

/// A react's `args`: none for an empty body (or `{}`), a 400 naming the field for bad JSON.
fn react_args(body: Result<web::Bytes, ApiError>) -> Result<Option<serde_json::Value>, ApiError> {
    let body = body?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    Ok(parse_json::<ReactRequest>(&body)?.args)
}

impl FromRequest for CallerReacting {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let body = body_bytes(req, payload);
        if req.extensions().get::<Authenticated>().is_some() {
            let caller = Caller::from_request(req, payload);
            return Box::pin(async move {
                let args = react_args(body.await);
                Ok(CallerReacting(caller.await?.0, None, args))
            });
        }
        let vault = req.app_data::<web::Data<Vault>>().cloned();
        let limit = req.app_data::<web::Data<RateLimit>>().cloned();
        let key = api_key(req);
        // Decoded as the handler's `web::Path<String>` decodes it, as for [`CallerReading`].
        let id = web::Path::<String>::extract(req);
        let mut body = Box::pin(body);
        Box::pin(async move {
            let vault = vault.ok_or_else(no_vault)?;
            // A request without a well-formed key is refused before its body is read.
            if key.as_deref().and_then(ApiKey::parse).is_none() {
                return Err(tokenvault_domain::Error::Unauthenticated.into());
            }
            // A body already here (a client's usual request) is read with the key; one still
            // arriving is awaited only once the caller is known, so a slow body never holds the
            // server for a key that is no key (the use case then reads its token itself).
            let arrived = futures_util::future::poll_immediate(body.as_mut())
                .await
                .map(react_args);
            let id = id.await.ok().and_then(|id| Uuid::parse_str(&id).ok());
            let (principal, prefetched) = match id {
                Some(id) => {
                    let named = arrived
                        .as_ref()
                        .and_then(|args| args.as_ref().ok())
                        .and_then(Option::as_ref);
                    vault
                        .auth
                        .authenticate_reacting(key.as_deref(), id, named)
                        .await?
                }
                // No such reactor: authenticate alone; the handler answers for the path.
                None => (vault.auth.authenticate(key.as_deref()).await?, None),
            };
            let limit = limit.as_ref().map(web::Data::get_ref);
            let caller = admit(&vault, principal, limit).await?;
            let args = match arrived {
                Some(args) => args,
                None => react_args(body.await),
            };
            Ok(CallerReacting(caller, prefetched, args))
        })
    }
}

/// A request's body within the payload limit and [`BODY_TIMEOUT`]; a problem when it cannot be
/// read (413 over the limit, 400 otherwise).
fn body_bytes(
    req: &HttpRequest,
    payload: &mut Payload,
) -> impl Future<Output = Result<web::Bytes, ApiError>> + use<> {
    let bytes = web::Bytes::from_request(req, payload);
    async move {
        let Ok(bytes) = tokio::time::timeout(BODY_TIMEOUT, bytes).await else {
            return Err(body_too_slow());
        };
        bytes.map_err(|e| {
            let status = e.as_response_error().status_code();
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(status, "The request body is larger than the limit.")
            } else {
                ApiError::invalid("body", "could not be read")
            }
        })
    }
}

/// A JSON body: bad JSON is a 400, a field of the wrong type a 400 naming the field, nesting
/// deeper than 64 levels a 400, a body over the limit a 413, a non-JSON content type a 415.
pub struct Json<T>(pub T);

fn json_depth(value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::Array(items) => 1 + items.iter().map(json_depth).max().unwrap_or(0),
        serde_json::Value::Object(map) => 1 + map.values().map(json_depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// The dotted name of a serde path (`rules[0].priority` → `rules.0.priority`).
fn dotted(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let parts: Vec<String> = path
        .iter()
        .filter_map(|segment| match segment {
            Segment::Seq { index } => Some(index.to_string()),
            Segment::Map { key } => Some(key.clone()),
            Segment::Enum { variant } => Some(variant.clone()),
            Segment::Unknown => None,
        })
        .collect();
    if parts.is_empty() {
        "body".into()
    } else {
        parts.join(".")
    }
}

/// Parses a JSON body into `T`, naming the offending field on a type error.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::invalid("body", "a JSON body is required"));
    }
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
        ApiError::invalid(
            "body",
            &format!("is not valid JSON ({})", e.classify_name()),
        )
    })?;
    if json_depth(&value) > MAX_JSON_DEPTH {
        return Err(ApiError::invalid(
            "body",
            "JSON is nested deeper than 64 levels",
        ));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let field = dotted(e.path());
        let message = type_message(&e.inner().to_string());
        ApiError::invalid(&field, &message)
    })
}

/// serde's message without any echoed value ("invalid type: integer `123`, expected a string"
/// becomes "must be a string").
fn type_message(raw: &str) -> String {
    // serde writes `<what was found>, expected <what the type wants>`: the found part may hold
    // the caller's value, "expected " included, so only the text after the last separator
    // (written by the type, never by the caller) is kept.
    if let Some((_, expected)) = raw.rsplit_once(", expected ") {
        format!("must be {}", expected.trim_end_matches('.'))
    } else if raw.starts_with("missing field") {
        "is required".into()
    } else {
        "has the wrong type".into()
    }
}

trait ClassifyName {
    fn classify_name(&self) -> &'static str;
}

impl ClassifyName for serde_json::Error {
    fn classify_name(&self) -> &'static str {
        match self.classify() {
            serde_json::error::Category::Io => "read error",
            serde_json::error::Category::Syntax => "syntax error",
            serde_json::error::Category::Data => "data error",
            serde_json::error::Category::Eof => "unexpected end",
        }
    }
}

fn is_json_content_type(req: &HttpRequest) -> bool {
    match req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        None => true,
        Some(ct) => {
            let mime = ct
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            mime == "application/json" || mime.ends_with("+json")
        }
    }
}

impl<T: DeserializeOwned + 'static> FromRequest for Json<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let json_ok = is_json_content_type(req);
        let bytes = body_bytes(req, payload);
        Box::pin(async move {
            if !json_ok {
                return Err(ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "The request body must be application/json.",
                ));
            }
            parse_json(&bytes.await?).map(Json)
        })
    }
}

/// How long a request body may take to arrive. A change runs as its own task (`complete.rs`),
/// which its connection does not hold: without this, a client trickling a body would hold one
/// of those bounded tasks for as long as it likes.
pub const BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The answer to a body that did not arrive in [`BODY_TIMEOUT`].
pub fn body_too_slow() -> ApiError {
    ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "The request body did not arrive in time.",
    )
}

/// The query string as name → values (repeated names keep every value; `id[]` is `id`).
pub struct QueryParams(BTreeMap<String, Vec<String>>);

impl QueryParams {
    /// Parses a raw query string.
    pub fn parse(query: &str) -> Self {
        let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            let key = k.strip_suffix("[]").unwrap_or(&k).to_string();
            map.entry(key).or_default().push(v.into_owned());
        }
        Self(map)
    }

    /// The first value of `name`.
    pub fn first(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(|v| v.first()).map(String::as_str)
    }

    /// Every name with its values.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_slice()))
    }

    /// Every value of `name`.
    pub fn all(&self, name: &str) -> &[String] {
        self.0.get(name).map_or(&[], Vec::as_slice)
    }

    /// `page` and `size` (docs/decisions.md §3).
    pub fn page(&self) -> Result<PageRequest, ApiError> {
        Ok(PageRequest::parse(self.first("page"), self.first("size"))?)
    }

    /// Every value of `name` as a UUID; a bad one is a 400 naming `name`.
    pub fn uuids(&self, name: &str) -> Result<Vec<Uuid>, ApiError> {
        let mut errors = ValidationErrors::new();
        let ids = self
            .all(name)
            .iter()
            .filter_map(|v| {
                let parsed = Uuid::parse_str(v).ok();
                if parsed.is_none() {
                    errors.add(name, "must be a UUID");
                }
                parsed
            })
            .collect();
        if errors.is_empty() {
            Ok(ids)
        } else {
            Err(ApiError::validation(&errors))
        }
    }
}

impl FromRequest for QueryParams {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(Ok(Self::parse(req.query_string())))
    }
}

/// Parses a path parameter that the interface declares as a UUID (400 naming it otherwise).
pub fn path_uuid(name: &str, raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| ApiError::invalid(name, "must be a UUID"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body that never arrives ends in a 408 after [`BODY_TIMEOUT`] (time is paused and
    /// advanced by the runtime, so the test does not wait).
    #[tokio::test(start_paused = true)]
    async fn a_body_that_never_arrives_is_a_408() {
        let req = actix_web::test::TestRequest::post()
            .insert_header(("content-type", "application/json"))
            .to_http_request();
        let never: Pin<
            Box<
                dyn futures_util::Stream<Item = Result<web::Bytes, actix_web::error::PayloadError>>,
            >,
        > = Box::pin(futures_util::stream::pending());
        let mut payload = Payload::Stream { payload: never };
        let refused = Json::<serde_json::Value>::from_request(&req, &mut payload)
            .await
            .err()
            .map(|e| e.status());
        assert_eq!(refused, Some(StatusCode::REQUEST_TIMEOUT));
    }

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Body {
        name: Option<String>,
        rules: Option<Vec<Rule>>,
    }

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Rule {
        priority: Option<i64>,
    }

    fn field_of(result: Result<Body, ApiError>) -> String {
        let err = result.unwrap_err();
        let body = actix_web::ResponseError::error_response(&err);
        assert_eq!(body.status(), StatusCode::BAD_REQUEST);
        err.to_string()
    }

    #[test]
    fn type_errors_name_the_field() {
        let err = parse_json::<Body>(br#"{"name": 123}"#).unwrap_err();
        assert_eq!(err.status(), StatusCode::BAD_REQUEST);
        let err = parse_json::<Body>(br#"{"rules": [{"priority": "x"}]}"#);
        let _ = field_of(err);
    }

    #[test]
    fn depth_limit() {
        let deep = format!("{}{}", "[".repeat(65), "]".repeat(65));
        assert!(parse_json::<serde_json::Value>(deep.as_bytes()).is_err());
        let ok = format!("{}{}", "[".repeat(64), "]".repeat(64));
        assert!(parse_json::<serde_json::Value>(ok.as_bytes()).is_ok());
    }

    #[test]
    fn dotted_paths() {
        let value: serde_json::Value =
            serde_json::from_str(r#"{"rules": [{"priority": "x"}]}"#).unwrap();
        let err = serde_path_to_error::deserialize::<_, Body>(value).unwrap_err();
        assert_eq!(dotted(err.path()), "rules.0.priority");
        assert_eq!(type_message(&err.inner().to_string()), "must be i64");
    }

    #[test]
    fn a_value_that_says_expected_is_not_echoed() {
        let value: serde_json::Value = serde_json::from_str(
            r#"{"rules": [{"priority": "x, expected 4242424242424242, expected 4"}]}"#,
        )
        .unwrap();
        let err = serde_path_to_error::deserialize::<_, Body>(value).unwrap_err();
        let said = type_message(&err.inner().to_string());
        assert_eq!(said, "must be i64");
        assert!(!said.contains("4242"));
    }

    #[test]
    fn repeated_query_parameters() {
        let q = QueryParams::parse("id=a&id%5B%5D=b&page=2");
        assert_eq!(q.all("id"), ["a", "b"]);
        assert_eq!(q.first("page"), Some("2"));
        assert!(q.uuids("id").is_err());
    }
}
