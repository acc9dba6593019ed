//! `POST /reactor-formulas/dry-run`: code run once as a reactor would run it, against sample
//! arguments and configuration, in the same sandbox and under the same limits, with nothing
//! stored and no token read (docs/decisions.md §9, "Dry runs"). What the code returned, how it
//! failed and what it wrote with `console.*` come back to the caller: that is the point of it.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value, json};

use super::raw_and_tokenize;
use crate::area_error::{CodeFailure, ReactorError};
use crate::auth::Principal;
use crate::error::{Error, ValidationErrors};
use crate::formula::check_code;
use crate::permission::Permission;
use crate::ports::code::{CodeCall, CodeConsole, CodeError};
use crate::service::Reactors;

/// A dry run as a client asked for it.
#[derive(Clone, Debug, Default)]
pub struct DryRunRequest {
    /// The formula's code (a CommonJS module).
    pub code: Option<Value>,
    /// `req.args`, passed as given: `{{ }}` expressions are not replaced (no token is read).
    pub args: Option<Value>,
    /// `req.configuration`, passed as given.
    pub configuration: Option<Value>,
}

/// One `console.*` line of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsoleLine {
    /// As the runner names it ([`CodeConsole::line`]).
    pub level: &'static str,
    /// The text, bounded by the runner.
    pub text: String,
}

/// What a dry run shows.
#[derive(Clone, Debug, PartialEq)]
pub struct DryRunOutcome {
    /// `raw` and `tokenize` of what the code returned (the block is shown, never tokenized),
    /// or how it failed: never [`CodeError::Busy`] nor [`CodeError::Internal`], which fail the
    /// dry run itself (503, 500).
    pub returned: Result<(Option<Value>, Option<Value>), CodeError>,
    /// Its `console.*` lines, in order.
    pub console: Vec<ConsoleLine>,
}

/// The lines of one run, collected as the runner hands them over.
#[derive(Default)]
struct Lines(Mutex<Vec<ConsoleLine>>);

impl CodeConsole for Lines {
    fn line(&self, level: &'static str, text: &str) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(ConsoleLine {
                level,
                text: text.to_string(),
            });
    }
}

impl Reactors {
    /// Runs `request.code` once, as a reactor of the caller's tenant without an application:
    /// `req.svc` is null, `fetch` goes through the vault's guarded client, nothing is stored
    /// and no token is read. Needs `reactor:create` or `reactor:update` (whoever may write a
    /// formula's code may try it); recorded in the audit log as `dry_run` of `formula` `*`.
    pub async fn dry_run(
        &self,
        caller: &Principal,
        request: DryRunRequest,
        trace_id: Option<String>,
    ) -> Result<DryRunOutcome, ReactorError> {
        caller.require_application()?;
        if caller.require(Permission::ReactorCreate).is_err() {
            caller.require(Permission::ReactorUpdate)?;
        }
        let (code, args, configuration) = parse(request)?;
        let lines = Arc::new(Lines::default());
        let returned = self
            .code
            .run(CodeCall {
                tenant_id: caller.tenant_id,
                code,
                request: json!({"args": args, "configuration": configuration, "svc": Value::Null}),
                trace_id,
                svc: None,
                fetch: Some(Arc::new(crate::code_fetch::GuardedFetch::new(
                    self.forwarder.clone(),
                ))),
                console: Some(lines.clone()),
            })
            .await;
        // The code ran unless every worker was busy: recorded whatever it did then (a runtime
        // failure included: it may have fetched), as an invocation is.
        if !matches!(returned, Err(CodeError::Busy)) {
            self.shared.audit(caller, "dry_run", "formula", ["*"]);
        }
        let returned = match returned {
            Ok(value) => Ok(raw_and_tokenize(value)),
            Err(CodeError::Busy) => return Err(CodeFailure::Busy.into()),
            Err(CodeError::Internal(why)) => {
                return Err(Error::internal(format!("code runtime: {why}")).into());
            }
            Err(failed) => Err(failed),
        };
        let console = std::mem::take(&mut *lines.0.lock().unwrap_or_else(PoisonError::into_inner));
        Ok(DryRunOutcome { returned, console })
    }
}

/// The code (as a formula's: [`check_code`]), the arguments and the
/// configuration (objects; absent or null: empty), or a 400 naming each field that is not.
fn parse(request: DryRunRequest) -> Result<(String, Value, Value), Error> {
    let mut errors = ValidationErrors::default();
    let code = match request.code {
        Some(Value::String(code)) => check_code(Some(code), &mut errors),
        None | Some(Value::Null) => check_code(None, &mut errors),
        Some(_) => {
            errors.add("code", "must be a string");
            None
        }
    };
    let mut object = |value: Option<Value>, field: &str| match value {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v,
        Some(_) => {
            errors.add(field, "must be an object");
            Value::Null
        }
    };
    let args = object(request.args, "args");
    let configuration = object(request.configuration, "configuration");
    match code {
        Some(code) if errors.is_empty() => Ok((code, args, configuration)),
        _ => Err(Error::Validation(errors)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formula::MAX_CODE_LEN;

    #[test]
    fn bad_fields_are_named_together() {
        let Err(Error::Validation(errors)) = parse(DryRunRequest {
            code: Some(json!(1)),
            args: Some(json!([])),
            configuration: Some(json!("x")),
        }) else {
            panic!("accepted");
        };
        let text = format!("{errors:?}");
        for field in ["code", "args", "configuration"] {
            assert!(text.contains(field), "{field} missing in {text}");
        }
        assert!(matches!(
            parse(DryRunRequest {
                code: Some(json!("x".repeat(MAX_CODE_LEN + 1))),
                ..DryRunRequest::default()
            }),
            Err(Error::Validation(_))
        ));
        let (code, args, configuration) = parse(DryRunRequest {
            code: Some(json!("module.exports = () => 1")),
            args: None,
            configuration: Some(Value::Null),
        })
        .expect("valid");
        assert_eq!(code, "module.exports = () => 1");
        assert_eq!((args, configuration), (json!({}), json!({})));
    }
}
