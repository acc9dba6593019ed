//! JSON request bodies: a body read within its limit and [`BODY_TIMEOUT`], and parsed into a type
//! with a 400 that names the offending field.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::{FromRequest, HttpRequest, web};
use serde::de::DeserializeOwned;

use crate::problem::ApiError;

/// The deepest JSON nesting accepted (docs/decisions.md §1).
pub const MAX_JSON_DEPTH: usize = 64;

/// A request's body within the payload limit and [`BODY_TIMEOUT`]; a problem when it cannot be
/// read (413 over the limit, 400 otherwise).
pub(crate) fn body_bytes(
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

/// Whether the request's content type is JSON (or unset).
pub(crate) fn is_json_content_type(req: &HttpRequest) -> bool {
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
        Box::pin(async move { json_of(json_ok, bytes.await).map(Json) })
    }
}

/// A body read as [`Json`] reads it: a 415 when its content type (`json_ok`:
/// [`is_json_content_type`]) is not JSON, else [`parse_json`].
pub(crate) fn json_of<T: DeserializeOwned>(
    json_ok: bool,
    bytes: Result<web::Bytes, ApiError>,
) -> Result<T, ApiError> {
    if !json_ok {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "The request body must be application/json.",
        ));
    }
    parse_json(&bytes?)
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
}
