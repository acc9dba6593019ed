//! What a call that did not return means: a limit (time, memory), the code's own error (a
//! thrown value, one of the prelude's error classes, a compile failure), each bounded before it
//! leaves the worker.

use std::time::Instant;

use rquickjs::{CaughtError, Ctx, Object, Value};
use serde_json::Value as Json;
use tokenvault_domain::ports::code::CodeError;

use super::script::module_line;

/// What ended a call that did not return.
pub(crate) enum Stop {
    Time,
    Memory,
}

/// What a caught exception means: a limit (time, memory), or the code's own error.
pub(crate) fn failure<'js>(
    ctx: &Ctx<'js>,
    caught: &CaughtError<'js>,
    deadline: Instant,
) -> Result<CodeError, Stop> {
    if Instant::now() >= deadline {
        return Err(Stop::Time);
    }
    let message = caught_message(caught);
    if is_out_of_memory(caught, &message) {
        return Err(Stop::Memory);
    }
    let value = match caught {
        CaughtError::Exception(e) => Some(e.as_value().clone()),
        CaughtError::Value(v) => Some(v.clone()),
        CaughtError::Error(_) => None,
    };
    // Bounded as it will travel: JSON-escaped (a control character takes six bytes).
    if serde_json::to_string(&message).map_or(usize::MAX, |m| m.len()) > MAX_THROWN {
        return Ok(thrown_too_large());
    }
    // Reading the stack may run the code's own getter: past the deadline, that is the limit.
    let line = made_on(caught);
    if Instant::now() >= deadline {
        return Err(Stop::Time);
    }
    Ok(value
        .and_then(|v| thrown(ctx, &v, &message, line))
        .unwrap_or(CodeError::Thrown {
            status: 500,
            message,
            errors: None,
            line,
        }))
}

/// The line of the tenant's module an `Error` was made on, from its `stack` (read as the
/// message is, within the call's deadline); `None` for any other thrown value.
fn made_on(caught: &CaughtError<'_>) -> Option<u64> {
    let CaughtError::Exception(e) = caught else {
        return None;
    };
    let stack: String = e.as_object().get("stack").ok()?;
    module_line(&stack)
}

/// Whether `caught` is the engine's own out-of-memory error: an `InternalError` whose message is
/// exactly that. (An `Error('out of memory')` the code throws is its own error. The engine's
/// error carries no mark code could not copy through a caught `InternalError`'s constructor; a
/// call that does so only reports its own failure as the memory limit.)
fn is_out_of_memory(caught: &CaughtError<'_>, message: &str) -> bool {
    let CaughtError::Exception(e) = caught else {
        return false;
    };
    message == "out of memory"
        && e.as_object()
            .get::<_, String>("name")
            .is_ok_and(|name| name == "InternalError")
}

/// The largest error a call may throw (its message and `errors`, or a custom response's headers
/// and body), as JSON text: checked here, before anything leaves the worker.
const MAX_THROWN: usize = 1 << 20;

/// What a thrown value that is neither an `Error` nor a string says.
pub(crate) const NON_ERROR: &str = "a non-Error value was thrown";

/// The longest compiler message passed on (characters).
pub(crate) const MAX_COMPILE_MESSAGE: usize = 1000;

fn thrown_too_large() -> CodeError {
    CodeError::Limit("the error the code threw is larger than 1 MiB".into())
}

/// Maps a thrown object of one of the prelude's classes to its status and `errors`.
fn thrown<'js>(
    ctx: &Ctx<'js>,
    value: &Value<'js>,
    message: &str,
    line: Option<u64>,
) -> Option<CodeError> {
    let object: &Object = value.as_object()?;
    if let Ok(custom) = object.get::<_, Object>("__tokenvault_custom") {
        let status: f64 = custom.get("status").unwrap_or(500.0);
        let headers: Value = custom.get("headers").ok()?;
        let body: Value = custom.get("body").ok()?;
        let (Ok(headers), Ok(body)) = (json_of(ctx, headers), json_of(ctx, body)) else {
            return Some(thrown_too_large());
        };
        return Some(CodeError::Custom {
            status: status_code(status),
            headers: headers.unwrap_or(Json::Null),
            body: body.unwrap_or(Json::Null),
        });
    }
    let status: f64 = object.get("__tokenvault_status").ok()?;
    let errors = match object.get::<_, Value>("errors") {
        Ok(e) if !e.is_undefined() => match json_of(ctx, e) {
            Ok(errors) => errors,
            Err(()) => return Some(thrown_too_large()),
        },
        _ => None,
    };
    Some(CodeError::Thrown {
        status: status_code(status),
        message: message.to_string(),
        errors,
        line,
    })
}

fn status_code(status: f64) -> u16 {
    if status.is_finite() && (100.0..=599.0).contains(&status) {
        // In range: the cast keeps the value.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let code = status as u16;
        code
    } else {
        500
    }
}

/// The JSON of `value`; `Err` when its text is larger than [`MAX_THROWN`] (never parsed).
fn json_of<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> Result<Option<Json>, ()> {
    let Some(text) = ctx
        .json_stringify(value)
        .ok()
        .flatten()
        .and_then(|t| t.to_string().ok())
    else {
        return Ok(None);
    };
    if text.len() > MAX_THROWN {
        return Err(());
    }
    Ok(serde_json::from_str(&text).ok())
}

pub(crate) fn caught_message(caught: &CaughtError<'_>) -> String {
    match caught {
        CaughtError::Exception(e) => e.message().unwrap_or_else(|| "error".into()),
        CaughtError::Value(v) => v
            .as_string()
            .and_then(|s| s.to_string().ok())
            .unwrap_or_else(|| NON_ERROR.into()),
        CaughtError::Error(e) => e.to_string(),
    }
}
