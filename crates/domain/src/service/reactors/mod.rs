//! Reactor formulas, reactors and their invocation (docs/decisions.md §9).

mod dry_run;
mod formulas;
mod manage;
mod react;

use serde_json::Value;

use crate::application::Application;
use crate::area_error::CodeFailure;
use crate::error::{Error, ValidationErrors};
use crate::formula::Formula;
use crate::mask::json_len;
use crate::ports::code::CodeError;
use crate::reactor::Reactor;

pub use dry_run::{ConsoleLine, DryRunOutcome, DryRunRequest};
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

fn too_large() -> CodeFailure {
    CodeFailure::Limit("the error the code threw is larger than 1 MiB".into())
}

/// What a code failure becomes: code that does not compile is unprocessable input naming
/// `code`; a thrown error class or a custom response is the code's failure as it chose it,
/// unless it carries more than 1 MiB (then a limit); the runtime's own failure is an internal
/// error.
pub(super) fn code_error<E: From<Error> + From<CodeFailure>>(e: CodeError) -> E {
    match e {
        CodeError::Compile(message) => {
            Error::Unprocessable(ValidationErrors::single("code", message)).into()
        }
        CodeError::Thrown {
            status,
            message,
            errors,
            ..
        } => {
            if message.len() + errors.as_ref().map_or(0, json_len) > MAX_CODE_ERROR {
                return too_large().into();
            }
            CodeFailure::Thrown {
                status,
                detail: message,
                errors,
            }
            .into()
        }
        CodeError::Custom {
            status,
            headers,
            body,
        } => {
            if json_len(&headers) + json_len(&body) > MAX_CODE_ERROR {
                return too_large().into();
            }
            CodeFailure::Custom {
                status,
                headers,
                body,
            }
            .into()
        }
        CodeError::Limit(why) => CodeFailure::Limit(why).into(),
        CodeError::Busy => CodeFailure::Busy.into(),
        CodeError::Internal(why) => Error::internal(format!("code runtime: {why}")).into(),
    }
}

/// `raw` and `tokenize` of what code returned: an object's two fields; anything else it
/// returns (a string, a number, an array) is the `raw` of the answer, as Basis Theory's
/// runtime answers it.
fn raw_and_tokenize(returned: Value) -> (Option<Value>, Option<Value>) {
    match returned {
        Value::Object(mut map) => (map.remove("raw"), map.remove("tokenize")),
        Value::Null => (None, None),
        other => (Some(other), None),
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
