//! `req.svc`'s wire for tenant code (docs/decisions.md §7): the domain runs each call as one
//! application (`service/svc.rs`); this adapter reads the code's arguments and writes the
//! answer with the same JSON (or problem) the HTTP API would, since that JSON is this
//! adapter's, and counts the calls against the server's per-application rate limit.

use std::sync::Arc;

use serde_json::Value;
use tokenvault_domain::area_error::TokenError;
use tokenvault_domain::ports::svc::{SvcAnswer, SvcCall, SvcWire};
use tokenvault_domain::token::RawTokenPatch;
use tokenvault_domain::token_new::RawNewToken;
use uuid::Uuid;

use crate::dto::Paginated;
use crate::limit::RateLimit;
use crate::problem::ApiError;
use crate::routes::tokens::{TokenResponse, filter_from_query, tokenized_json};

/// `req.svc`'s JSON, and the rate limit its calls share with the HTTP API.
#[derive(Clone, Debug)]
pub struct HttpSvcWire {
    limit: Arc<RateLimit>,
}

impl HttpSvcWire {
    /// `req.svc` calls count against `limit`, the server's own per-application rate limit
    /// (docs/decisions.md §11): code cannot make more calls than its application could.
    pub fn new(limit: Arc<RateLimit>) -> Self {
        Self { limit }
    }
}

fn arg(args: &[Value], i: usize) -> Value {
    args.get(i).cloned().unwrap_or(Value::Null)
}

fn id_arg(args: &[Value]) -> Result<String, ApiError> {
    match args.first() {
        Some(Value::String(id)) => Ok(id.clone()),
        _ => Err(ApiError::invalid("id", "must be a string")),
    }
}

fn object(value: Value, field: &str) -> Result<serde_json::Map<String, Value>, ApiError> {
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(ApiError::invalid(field, "must be an object")),
    }
}

fn json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn read(method: &str, args: &[Value]) -> Result<SvcCall, ApiError> {
    Ok(match method {
        "tokens.create" => SvcCall::Create(
            RawNewToken::from_object(&object(arg(args, 0), "body")?)
                .map_err(|e| ApiError::validation(&e))?,
        ),
        "tokens.retrieve" => SvcCall::Retrieve(id_arg(args)?),
        "tokens.update" => {
            let id = id_arg(args)?;
            let patch = RawTokenPatch::from_object(&object(arg(args, 1), "patch")?);
            SvcCall::Update(id, patch)
        }
        "tokens.delete" => SvcCall::Delete(id_arg(args)?),
        "tokens.list" => {
            let (filter, page) = filter_from_query(&object(arg(args, 0), "query")?)?;
            SvcCall::List(filter, page)
        }
        "tokenize" => SvcCall::Tokenize(arg(args, 0)),
        "detokenize" => SvcCall::Detokenize(arg(args, 0)),
        _ => return Err(ApiError::invalid("method", "is not a svc method")),
    })
}

impl SvcWire for HttpSvcWire {
    fn admit(&self, application: Uuid) -> Result<(), Value> {
        self.limit.check(application).map_err(|e| e.problem_body())
    }

    fn read(&self, method: &str, args: &[Value]) -> Result<SvcCall, Value> {
        read(method, args).map_err(|e| e.problem_body())
    }

    fn write(&self, answer: SvcAnswer) -> Value {
        match answer {
            SvcAnswer::Token(view) => json(&TokenResponse::from(*view)),
            SvcAnswer::Nothing => Value::Null,
            SvcAnswer::Tokens(page) => json(&Paginated::from_page(page, TokenResponse::from)),
            SvcAnswer::Tokenized(shape) => tokenized_json(shape),
            SvcAnswer::Detokenized(value) => value,
        }
    }

    fn problem(&self, error: TokenError) -> Value {
        ApiError::from(error).problem_body()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_read_as_the_http_api_reads_them() {
        assert!(matches!(
            read("tokens.retrieve", &[Value::from("tok")]),
            Ok(SvcCall::Retrieve(id)) if id == "tok"
        ));
        assert!(matches!(
            read("tokens.update", &[Value::from("tok"), serde_json::json!({"metadata": {}})]),
            Ok(SvcCall::Update(id, _)) if id == "tok"
        ));
        for (method, args, field) in [
            ("tokens.retrieve", vec![Value::from(7)], "id"),
            ("tokens.create", vec![Value::from("x")], "body"),
            (
                "tokens.update",
                vec![Value::from("tok"), Value::Null],
                "patch",
            ),
            ("tokens.list", vec![Value::from(1)], "query"),
            ("tokens.drop", vec![], "method"),
        ] {
            let problem = read(method, &args).unwrap_err().problem_body();
            assert_eq!(problem["status"], 400, "{method}");
            assert!(
                problem["errors"].get(field).is_some(),
                "{method}: {problem}"
            );
        }
    }
}
