//! The one mapping from failures to RFC 7807 `application/problem+json` (docs/decisions.md §2), used by
//! every route, every extractor and, through the middleware, by actix's own errors. The areas' own
//! errors (`TokenError`, `ReactorError`, `ProxyError`) are mapped in `area_problem.rs`.

use std::fmt;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;
use tokenvault_domain::{Error, ValidationErrors};
use utoipa::ToSchema;

/// The content type of every error response.
pub const PROBLEM_JSON: &str = "application/problem+json";

tokio::task_local! {
    /// The trace id of the request being served (set by the trace middleware).
    pub static TRACE_ID: String;
}

/// The current request's trace id, when inside one.
pub fn current_trace_id() -> Option<String> {
    TRACE_ID.try_with(Clone::clone).ok()
}

/// An RFC 7807 problem body.
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// Always `about:blank`: the status says it all.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The status's reason phrase.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// What went wrong, without any secret.
    pub detail: String,
    /// Property name (dotted when nested) → messages, on validation errors; what tenant code
    /// gave its error class, on code errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub errors: Option<serde_json::Value>,
    /// The request's trace id, to find it in the log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// Marks a response that tenant code asked for (`CustomHttpResponseError`): sent as given, not
/// turned into a problem by the trace middleware.
#[derive(Clone, Copy, Debug)]
pub struct TenantResponse;

/// A failure on its way to becoming a problem response.
#[derive(Debug)]
pub struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) detail: String,
    pub(crate) errors: Option<serde_json::Value>,
    /// A response tenant code asked for, sent as given instead of a problem.
    pub(crate) custom: Option<Box<(StatusCode, serde_json::Value, serde_json::Value)>>,
    /// Seconds for `Retry-After` (rate limits).
    pub(crate) retry_after: Option<u64>,
}

impl ApiError {
    /// A problem with `status` and `detail`.
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            status,
            detail: detail.into(),
            errors: None,
            custom: None,
            retry_after: None,
        }
    }

    /// A 429: the caller is over its rate; it may retry after `seconds`.
    pub fn too_many_requests(seconds: u64) -> Self {
        Self {
            retry_after: Some(seconds),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "The application is over its rate limit; retry after the Retry-After seconds.",
            )
        }
    }

    /// Seconds for `Retry-After`, on a 429.
    pub fn retry_after(&self) -> Option<u64> {
        self.retry_after
    }

    /// A 400 naming the fields.
    pub fn validation(errors: &ValidationErrors) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            detail: "One or more validation errors occurred.".into(),
            errors: Some(fields_json(errors)),
            custom: None,
            retry_after: None,
        }
    }

    /// A 400 naming one field.
    pub fn invalid(field: &str, message: &str) -> Self {
        Self::validation(&ValidationErrors::single(field, message))
    }

    /// The status it will be sent with.
    pub fn status(&self) -> StatusCode {
        self.status
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status, self.detail)
    }
}

impl From<Error> for ApiError {
    fn from(err: Error) -> Self {
        match err {
            Error::Validation(errors) => Self::validation(&errors),
            Error::Unauthenticated => Self::new(
                StatusCode::UNAUTHORIZED,
                "A valid API key is required in the SVC-API-KEY header.",
            ),
            Error::Forbidden => Self::new(
                StatusCode::FORBIDDEN,
                "The API key does not grant the permission this operation needs.",
            ),
            Error::NotFound => Self::new(StatusCode::NOT_FOUND, "The resource was not found."),
            Error::Unprocessable(errors) => Self {
                status: StatusCode::UNPROCESSABLE_ENTITY,
                detail: "The request is well-formed but cannot be processed.".into(),
                errors: Some(fields_json(&errors)),
                custom: None,
                retry_after: None,
            },
            Error::Overloaded(what) => {
                tracing::warn!(behind = what, "request refused: the vault is behind");
                Self {
                    retry_after: Some(1),
                    ..Self::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "The vault is busy with this tenant's audit log (behind on writing it, or \
                         verifying it); retry after the Retry-After seconds.",
                    )
                }
            }
            Error::Unavailable(_) => {
                tracing::warn!(error = %err.chain(), "request refused: a database node is unreachable");
                Self {
                    retry_after: Some(1),
                    ..Self::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "Part of the storage holding this tenant's data is unreachable; retry \
                         after the Retry-After seconds.",
                    )
                }
            }
            Error::Internal { .. } => {
                // The whole cause chain goes to the log (with the trace id of the span), never
                // to the client.
                tracing::error!(error = %err.chain(), "internal error");
                Self::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "An unexpected error occurred.",
                )
            }
        }
    }
}

/// Whether tenant code may set this response header: never the message framing (length,
/// encoding, connection and the other hop-by-hop headers), cookies, or the vault's own
/// `SVC-*` headers.
fn tenant_may_set(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    !matches!(
        name.as_str(),
        "content-length"
            | "transfer-encoding"
            | "connection"
            | "keep-alive"
            | "upgrade"
            | "te"
            | "trailer"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "set-cookie"
            | "x-content-type-options"
    ) && !name.starts_with("svc-")
}

fn fields_json(errors: &ValidationErrors) -> serde_json::Value {
    serde_json::to_value(errors.fields()).unwrap_or_default()
}

/// A problem response for `status`, carrying the current trace id.
pub fn problem_response(
    status: StatusCode,
    detail: &str,
    errors: Option<serde_json::Value>,
) -> HttpResponse {
    let body = Problem {
        kind: "about:blank",
        title: status.canonical_reason().unwrap_or("Error").to_string(),
        status: status.as_u16(),
        detail: detail.to_string(),
        errors,
        trace_id: current_trace_id(),
    };
    let json = serde_json::to_vec(&body).unwrap_or_else(|_| b"{}".to_vec());
    HttpResponse::build(status)
        .insert_header((header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON)))
        .body(json)
}

/// The default detail for a status without a more specific one (framework errors).
pub fn default_detail(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "The request is malformed.",
        401 => "A valid API key is required in the SVC-API-KEY header.",
        404 => "No such route or resource.",
        405 => "The method is not allowed on this route.",
        413 => "The request body is larger than the limit.",
        415 => "The content type of the request is not supported.",
        _ => "The request failed.",
    }
}

impl ApiError {
    /// The problem body this error answers with, as JSON (for `svc` calls of tenant code).
    pub fn problem_body(&self) -> serde_json::Value {
        let body = Problem {
            kind: "about:blank",
            title: self
                .status
                .canonical_reason()
                .unwrap_or("Error")
                .to_string(),
            status: self.status.as_u16(),
            detail: self.detail.clone(),
            errors: self.errors.clone(),
            trace_id: current_trace_id(),
        };
        serde_json::to_value(body).unwrap_or_default()
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        if let Some(custom) = &self.custom {
            let (status, headers, body) = custom.as_ref();
            let mut response = HttpResponse::build(*status);
            if let Some(headers) = headers.as_object() {
                for (name, value) in headers.iter().filter(|(n, _)| tenant_may_set(n)) {
                    let value = value
                        .as_str()
                        .map_or_else(|| value.to_string(), str::to_string);
                    if let (Ok(n), Ok(v)) = (
                        header::HeaderName::try_from(name.as_str()),
                        HeaderValue::try_from(value),
                    ) {
                        response.insert_header((n, v));
                    }
                }
            }
            let mut built = match body {
                serde_json::Value::String(text) => response.body(text.clone()),
                other => response
                    .content_type("application/json")
                    .body(other.to_string()),
            };
            built.headers_mut().insert(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            );
            built.extensions_mut().insert(TenantResponse);
            return built;
        }
        let mut response = problem_response(self.status, &self.detail, self.errors.clone());
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_whose_audit_log_is_behind_gets_503_with_retry_after() {
        let behind = ApiError::from(Error::Overloaded("the tenant's audit log"));
        assert_eq!(behind.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(behind.retry_after(), Some(1));
        let response = behind.error_response();
        assert_eq!(response.headers().get(header::RETRY_AFTER).unwrap(), "1");
    }

    #[test]
    fn an_unreachable_database_node_is_503_and_keeps_its_cause_out() {
        let cause = std::io::Error::other("connection to the remote node 10.0.0.7:5432 failed");
        let down = ApiError::from(Error::Unavailable(Box::new(cause)));
        assert_eq!(down.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(down.retry_after(), Some(1));
        let body = down.problem_body().to_string();
        assert!(body.contains("unreachable"), "{body}");
        assert!(
            !body.contains("10.0.0.7"),
            "the node stays in the log: {body}"
        );
    }
}
