//! Reactor formulas, reactors and their invocation (docs/decisions.md §9).

mod formulas;
mod manage;
mod react;

use serde_json::Value;

use crate::application::Application;
use crate::code::CodeError;
use crate::error::{Error, ValidationErrors};
use crate::mask::json_len;
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

/// `POST`/`PUT /reactors` as a client sent it.
#[derive(Clone, Debug, Default)]
pub struct RawReactor {
    /// `name`.
    pub name: Option<String>,
    /// `configuration` (must be an object).
    pub configuration: Option<Value>,
    /// `formula.id`, as given (a UUID string).
    pub formula_id: Option<String>,
    /// `application.id`, as given (a UUID string); `None` when absent or null.
    pub application_id: Option<String>,
}

/// The most a code error (message, `errors`, custom headers and body together) may carry.
const MAX_CODE_ERROR: usize = 1 << 20;

fn too_large() -> Error {
    Error::Code {
        status: 500,
        detail: "the error the code threw is larger than 1 MiB".into(),
        errors: None,
    }
}

/// What a code failure becomes: a thrown error class keeps its status (an error status:
/// 400–599, else 500), message and `errors`; a custom response keeps its status when it is one
/// that carries a body (200–599 but 204 and 304, else 500) — a 1xx or body-less status with a
/// body would split the HTTP stream; a limit is a 500 saying which; the runtime's own failure is
/// an internal error. Nothing larger than 1 MiB passes.
pub(super) fn code_error(e: CodeError) -> Error {
    match e {
        CodeError::Compile(message) => {
            Error::Unprocessable(ValidationErrors::single("code", message))
        }
        CodeError::Thrown {
            status,
            message,
            errors,
        } => {
            if message.len() + errors.as_ref().map_or(0, json_len) > MAX_CODE_ERROR {
                return too_large();
            }
            Error::Code {
                status: if (400..=599).contains(&status) {
                    status
                } else {
                    500
                },
                detail: message,
                errors,
            }
        }
        CodeError::Custom {
            status,
            headers,
            body,
        } => {
            if json_len(&headers) + json_len(&body) > MAX_CODE_ERROR {
                return too_large();
            }
            let carries_body = (200..=599).contains(&status) && status != 204 && status != 304;
            Error::CustomResponse {
                status: if carries_body { status } else { 500 },
                headers,
                body,
            }
        }
        CodeError::Limit(why) => Error::Code {
            status: 500,
            detail: why,
            errors: None,
        },
        CodeError::Busy => Error::Code {
            status: 503,
            detail: "every code worker is busy; try again".into(),
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
