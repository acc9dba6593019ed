//! `POST /reactor-formulas/dry-run`: code run once against sample arguments and configuration,
//! nothing stored; what it returned or how it failed, and its `console` lines.

use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokenvault_domain::Vault;
use tokenvault_domain::ports::code::CodeError;
use tokenvault_domain::service::{DryRunOutcome, DryRunRequest};
use utoipa::ToSchema;

use super::Result;
use crate::extract::Caller;
use crate::json_body::Json;
use crate::problem::{Problem, current_trace_id};

/// `POST /reactor-formulas/dry-run`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DryRunBody {
    /// The code: a CommonJS module, at most 50,000 characters.
    #[schema(value_type = String)]
    pub code: Option<Value>,
    /// `req.args`, as given: `{{ }}` expressions are not replaced (no token is read).
    #[schema(value_type = Option<Object>)]
    pub args: Option<Value>,
    /// `req.configuration`, as given.
    #[schema(value_type = Option<Object>)]
    pub configuration: Option<Value>,
}

/// How the code failed.
#[derive(Debug, Serialize, ToSchema)]
pub struct DryRunError {
    /// `compile`, `thrown`, `custom_response` or `limit`.
    pub kind: &'static str,
    /// The status an invocation would answer with.
    pub status: u16,
    /// The error's message (absent for a custom response).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The line of the code the compiler names, or the first of the code in a thrown
    /// `Error`'s stack; counted from 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// A thrown error class's constructor argument.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub errors: Option<Value>,
    /// A custom response's headers.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub headers: Option<Value>,
    /// A custom response's body.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub body: Option<Value>,
}

/// One `console.*` line.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConsoleLineResponse {
    /// `info` (`console.log`, `console.info`), `warn`, `error` or `debug` (`console.debug`,
    /// `console.trace`).
    pub level: &'static str,
    /// What the code wrote.
    pub message: String,
}

/// What a dry run shows: `raw` and `tokenize` as returned (the block is never tokenized), or
/// `error`; and the console lines either way.
#[derive(Debug, Serialize, ToSchema)]
pub struct DryRunResponse {
    /// What the code returned as `raw`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub raw: Option<Value>,
    /// What the code returned as `tokenize`, as it returned it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub tokenize: Option<Value>,
    /// How the code failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<DryRunError>,
    /// Its `console.*` lines, in order (at most 200, each at most 4,096 characters).
    pub console: Vec<ConsoleLineResponse>,
}

impl From<CodeError> for DryRunError {
    fn from(failure: CodeError) -> Self {
        let line = failure.line();
        let plain = |kind, status, message| Self {
            kind,
            status,
            message: Some(message),
            line,
            errors: None,
            headers: None,
            body: None,
        };
        match failure {
            CodeError::Compile(message) => plain("compile", 422, message),
            CodeError::Thrown {
                status,
                message,
                errors,
                ..
            } => Self {
                errors,
                ..plain("thrown", status, message)
            },
            CodeError::Custom {
                status,
                headers,
                body,
            } => Self {
                message: None,
                headers: Some(headers),
                body: Some(body),
                ..plain("custom_response", status, String::new())
            },
            CodeError::Limit(why) => plain("limit", 500, why),
            // Never in an outcome: they fail the dry run itself (503, 500).
            CodeError::Busy => plain("busy", 503, "every code worker is busy".into()),
            CodeError::Internal(_) => plain("internal", 500, "the code runtime failed".into()),
        }
    }
}

impl From<DryRunOutcome> for DryRunResponse {
    fn from(outcome: DryRunOutcome) -> Self {
        let console = outcome
            .console
            .into_iter()
            .map(|line| ConsoleLineResponse {
                level: line.level,
                message: line.text,
            })
            .collect();
        match outcome.returned {
            Ok((raw, tokenize)) => Self {
                raw,
                tokenize,
                error: None,
                console,
            },
            Err(failure) => Self {
                raw: None,
                tokenize: None,
                error: Some(failure.into()),
                console,
            },
        }
    }
}

/// Run code once as a reactor would, nothing stored, no token read: `reactor:create` or
/// `reactor:update`. 200 whether the code returned or failed (`error` says how).
#[utoipa::path(post, path = "/reactor-formulas/dry-run", tag = "reactors",
    request_body = DryRunBody,
    responses((status = 200, body = DryRunResponse), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem),
              (status = 503, description = "every code worker is busy", body = Problem)),
    security(("api_key" = [])))]
pub async fn dry_run(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    Json(body): Json<DryRunBody>,
) -> Result<HttpResponse> {
    let request = DryRunRequest {
        code: body.code,
        args: body.args,
        configuration: body.configuration,
    };
    let outcome = vault
        .reactors
        .dry_run(&caller, request, current_trace_id())
        .await?;
    Ok(HttpResponse::Ok().json(DryRunResponse::from(outcome)))
}
