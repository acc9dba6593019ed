//! The code runtime port (docs/decisions.md §7): tenant-written JavaScript, run in a sandbox for
//! reactors and proxy transforms. The domain says what a call is and what can come back; the
//! adapter (`tokenvault-code`, QuickJS) decides how.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use uuid::Uuid;

use crate::ports::forward::{OutboundRequest, OutboundResponse};

pub use crate::formula::MAX_CODE_LEN;

/// One invocation: the module's source and the request object it is called with.
#[derive(Clone)]
pub struct CodeCall {
    /// The tenant whose code it is: one tenant holds at most its share of the runtime.
    pub tenant_id: Uuid,
    /// A CommonJS module: `module.exports = async function (req) { … }`.
    pub code: String,
    /// The request object, without `svc` (`args`, `configuration`, …).
    pub request: Value,
    /// The trace id of the HTTP request, for `console.*` lines.
    pub trace_id: Option<String>,
    /// `req.svc`: the token API acting as an application (`None`: `req.svc` is null).
    pub svc: Option<Arc<dyn Svc>>,
    /// `fetch` and the modules built on it: the vault's guarded outbound client (`None`: every
    /// request is refused).
    pub fetch: Option<Arc<dyn CodeFetch>>,
    /// Where the call's `console.*` lines go besides the server's log (`None`: the log only;
    /// a dry run shows them to its caller).
    pub console: Option<Arc<dyn CodeConsole>>,
}

/// Receives a call's `console.*` lines, each already bounded by the runner (the most lines one
/// call keeps, the longest line).
pub trait CodeConsole: Send + Sync {
    /// One line: `level` is the runner's name for its `console` method, one of `info`
    /// (`console.log`, `console.info`), `warn`, `error`, `debug` (`console.debug`,
    /// `console.trace`) or `log` (anything else).
    fn line(&self, level: &'static str, text: &str);
}

impl std::fmt::Debug for CodeCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The request carries detokenized data: never printed.
        f.debug_struct("CodeCall")
            .field("tenant_id", &self.tenant_id)
            .field("code_len", &self.code.len())
            .field("trace_id", &self.trace_id)
            .field("svc", &self.svc.is_some())
            .field("fetch", &self.fetch.is_some())
            .field("console", &self.console.is_some())
            .finish_non_exhaustive()
    }
}

/// How a call failed. The `message` of a thrown error is the tenant's own text (it may hold
/// whatever their code put there); nothing of the vault's is added to it.
#[derive(Clone, Debug, PartialEq)]
pub enum CodeError {
    /// The code does not compile (422 at its invocation): the error and its line.
    Compile(String),
    /// The code threw: one of the error classes (their status) or anything else (500). `errors`
    /// is the class's constructor argument, for the problem body.
    Thrown {
        /// HTTP status of the class (500 for any other thrown value).
        status: u16,
        /// The error's message.
        message: String,
        /// The constructor argument, when one was given.
        errors: Option<Value>,
        /// The line of the code the error was made on (its stack's first frame in the code,
        /// counted from 1); `None` for a thrown value that is not an `Error`, or one made
        /// outside the code. Shown by a dry run, not by an invocation.
        line: Option<u64>,
    },
    /// `CustomHttpResponseError({status, headers, body})`: returned as given.
    Custom {
        /// Status.
        status: u16,
        /// Headers.
        headers: Value,
        /// Body.
        body: Value,
    },
    /// A sandbox limit was reached: time, memory or output size (500 with this detail).
    Limit(String),
    /// Every worker is busy and the queue is full (503: try again).
    Busy,
    /// The runtime itself failed (500; the cause is for the log).
    Internal(String),
}

impl CodeError {
    /// The line of the code a compile error names (its message's last `line <n>`) or a thrown
    /// error was made on, counted from 1; `None` for any other error.
    pub fn line(&self) -> Option<u64> {
        let message = match self {
            Self::Compile(message) => message,
            Self::Thrown { line, .. } => return *line,
            _ => return None,
        };
        let at = message.rfind("line ")?;
        let digits: String = message[at + 5..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    }
}

/// Runs tenant code in the sandbox.
///
/// # Errors
/// `run`: a [`CodeError`] for anything but a JSON result (code that does not compile included:
/// code is stored as given).
#[async_trait]
pub trait CodeRunner: Send + Sync {
    /// Runs `call.code` with `call.request` and returns the JSON of what it returned.
    async fn run(&self, call: CodeCall) -> Result<Value, CodeError>;

    /// Whether `code` compiles as the module [`Self::run`] would load, without running any of
    /// it; compiled in the same sandbox, as `tenant_id`'s code. `Err` when the check itself
    /// could not be made (every worker busy, a limit reached while compiling).
    async fn compiles(&self, tenant_id: Uuid, code: &str) -> Result<bool, CodeError>;
}

/// `req.svc` (docs/decisions.md §7): the token API as one application, its permissions and
/// rules and nothing more.
///
/// # Errors
/// The problem body (JSON) the HTTP API would answer with.
#[async_trait]
pub trait Svc: Send + Sync {
    /// Calls `method` — `tokens.create`, `tokens.retrieve`, `tokens.update`, `tokens.delete`,
    /// `tokens.list` or `tokenize` — with the code's arguments; the JSON the HTTP API returns.
    async fn call(&self, method: &str, args: Vec<Value>) -> Result<Value, Value>;
}

/// An outbound HTTP request made by tenant code (`fetch`, docs/decisions.md §7), through the
/// proxies' outbound client and destination policy.
///
/// # Errors
/// Why the request got no answer, as the message the code's promise rejects with.
#[async_trait]
pub trait CodeFetch: Send + Sync {
    /// Sends `request`; the whole answer.
    async fn fetch(&self, request: OutboundRequest) -> Result<OutboundResponse, String>;
}

#[cfg(test)]
mod tests {
    use super::CodeError;

    #[test]
    fn a_compile_errors_line_is_read_from_its_message() {
        let compile = |m: &str| CodeError::Compile(m.into());
        assert_eq!(
            compile("SyntaxError: unexpected token in expression: ')' (line 3)").line(),
            Some(3)
        );
        assert_eq!(
            compile("SyntaxError: expecting '}' (formula.js, line 12)").line(),
            Some(12)
        );
        assert_eq!(compile("SyntaxError: something").line(), None);
        assert_eq!(CodeError::Limit("line 4".into()).line(), None);
    }
}
