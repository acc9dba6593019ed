//! Reactor formulas, reactors and their invocation (docs/decisions.md §9).

mod formulas;
mod manage;
mod react;

use serde_json::Value;

use crate::application::Application;
use crate::code::CodeError;
use crate::error::{Error, ValidationErrors};
use crate::reactor::{Formula, Reactor};

pub use react::ReactResult;

/// A reactor as responses show it: with its whole formula and its application (never a key).
#[derive(Clone, Debug)]
pub struct ReactorView {
    /// The reactor.
    pub reactor: Reactor,
    /// Its formula.
    pub formula: Formula,
    /// Its application, if it has one.
    pub application: Option<Application>,
}

/// A `formula.id` or `application.id` as the body gave it.
#[derive(Clone, Debug, Default)]
pub struct RawReactor {
    /// `name`.
    pub name: Option<String>,
    /// `configuration` (must be an object).
    pub configuration: Option<Value>,
    /// `formula.id`, as given (a UUID string).
    pub formula_id: Option<String>,
    /// `application.id`, as given (a UUID string); `Some(None)` when `application` is null.
    pub application_id: Option<String>,
}

/// What a code failure becomes: a thrown error class keeps its status, message and `errors`; a
/// limit is a 500 saying which; the runtime's own failure is an internal error.
fn code_error(e: CodeError) -> Error {
    match e {
        CodeError::Compile(message) => {
            Error::Unprocessable(ValidationErrors::single("code", message))
        }
        CodeError::Thrown {
            status,
            message,
            errors,
        } => Error::Code {
            status,
            detail: message,
            errors,
        },
        CodeError::Custom {
            status,
            headers,
            body,
        } => Error::CustomResponse {
            status,
            headers,
            body,
        },
        CodeError::Limit(why) => Error::Code {
            status: 500,
            detail: why,
            errors: None,
        },
        CodeError::Internal(why) => Error::internal(format!("code runtime: {why}")),
    }
}

/// A path id given in a body (`formula.id`) as a UUID, or a 400 naming it.
fn body_uuid(raw: Option<&str>, field: &str, errors: &mut ValidationErrors) -> Option<uuid::Uuid> {
    match raw.map(uuid::Uuid::parse_str) {
        None => None,
        Some(Ok(id)) => Some(id),
        Some(Err(_)) => {
            errors.add(field, "must be a UUID");
            None
        }
    }
}
