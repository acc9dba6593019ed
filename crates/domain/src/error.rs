//! Errors of the use cases and of the driven ports.

use std::collections::BTreeMap;
use std::fmt;

/// Validation failures, keyed by the (dotted) name of the offending property: `name`,
/// `rules.0.container`. Every message is a short sentence without the submitted value, so that
/// no secret can be echoed back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValidationErrors(BTreeMap<String, Vec<String>>);

impl ValidationErrors {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A set holding one message for one field.
    pub fn single(field: impl Into<String>, message: impl Into<String>) -> Self {
        let mut errors = Self::new();
        errors.add(field, message);
        errors
    }

    /// Records `message` against `field`.
    pub fn add(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.0.entry(field.into()).or_default().push(message.into());
    }

    /// Whether no error was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `field` has at least one message.
    pub fn contains(&self, field: &str) -> bool {
        self.0.contains_key(field)
    }

    /// The field → messages map.
    pub fn fields(&self) -> &BTreeMap<String, Vec<String>> {
        &self.0
    }

    /// `Ok(value)` when empty, the errors otherwise.
    pub fn into_result<T>(self, value: T) -> Result<T, Error> {
        if self.is_empty() {
            Ok(value)
        } else {
            Err(Error::Validation(self))
        }
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fields: Vec<&str> = self.0.keys().map(String::as_str).collect();
        write!(f, "invalid fields: {}", fields.join(", "))
    }
}

/// The failures every use case shares. An operation with failures of its own (a token id taken,
/// a formula in use, code that failed) has its own error type beside it (`area_error`); there
/// is no catch-all conflict. The inbound adapter decides what each becomes on the wire
/// (docs/decisions.md §2).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input, naming each field.
    #[error("validation failed: {0}")]
    Validation(ValidationErrors),
    /// Missing, unknown, expired or revoked API key.
    #[error("authentication required")]
    Unauthenticated,
    /// Valid key without the needed permission.
    #[error("forbidden")]
    Forbidden,
    /// Unknown resource, or one of another tenant.
    #[error("not found")]
    NotFound,
    /// Well-formed but unusable input (code that does not compile), naming the field.
    #[error("unprocessable: {0}")]
    Unprocessable(ValidationErrors),
    /// The request was not run because the vault is behind on its tenant's behalf (its audit
    /// log waits to be written); it may be retried shortly. What is behind, for the log.
    #[error("overloaded: {0}")]
    Overloaded(&'static str),
    /// A database node holding the tenant's rows cannot be reached (on a distributed database,
    /// a node that is down): the request did not run, and may succeed when retried. The cause
    /// goes to the log only.
    #[error("unavailable")]
    Unavailable(#[source] BoxError),
    /// Anything unexpected: what failed and, when there is one, its cause. Both go to the
    /// log only (the whole chain), never to a client.
    #[error("internal error: {context}")]
    Internal {
        /// What the use case was doing.
        context: String,
        /// The underlying failure.
        #[source]
        source: Option<BoxError>,
    },
}

/// A failure carried as the cause of another.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

impl Error {
    /// An unexpected failure without an underlying cause.
    pub fn internal(context: impl Into<String>) -> Self {
        Self::Internal {
            context: context.into(),
            source: None,
        }
    }

    /// An unexpected failure caused by `source` (kept, not formatted into the message).
    pub fn internal_from(
        context: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Internal {
            context: context.into(),
            source: Some(Box::new(source)),
        }
    }

    /// `self` and every cause below it, joined by `: ` (for the log).
    pub fn chain(&self) -> String {
        let mut out = self.to_string();
        let mut next = std::error::Error::source(self);
        while let Some(cause) = next {
            out.push_str(": ");
            out.push_str(&cause.to_string());
            next = cause.source();
        }
        out
    }

    /// A validation error for a single field.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Validation(ValidationErrors::single(field, message))
    }
}

/// Error contract of every repository port.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// A uniqueness constraint was violated (what the backend said, for the log). Only the
    /// token writes have values a caller chooses (`TokenWrite` answers those); anywhere else
    /// the value was generated, and its collision is an internal error.
    #[error("conflict: {0}")]
    Conflict(String),
    /// A row the write refers to is missing (a foreign key failed). An internal error unless
    /// the use case knows better: a create whose tenant was deleted meanwhile (its request was
    /// past its key check when the deletion committed) is refused as unauthenticated
    /// (`Shared::tenant_write`).
    #[error("gone: {0}")]
    Gone(String),
    /// The backend failed; the cause is for the log.
    #[error("storage failure")]
    Backend(#[source] BoxError),
    /// A database node holding the rows cannot be reached (on Citus, a worker that is down);
    /// the cause is for the log.
    #[error("storage node unreachable")]
    Unavailable(#[source] BoxError),
}

impl From<RepoError> for Error {
    fn from(err: RepoError) -> Self {
        match err {
            conflict @ RepoError::Conflict(_) => Error::internal_from("storage", conflict),
            gone @ RepoError::Gone(_) => Error::internal_from("storage", gone),
            backend @ RepoError::Backend(_) => Error::internal_from("storage", backend),
            unreachable @ RepoError::Unavailable(_) => Error::Unavailable(Box::new(unreachable)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_node_is_unavailable_not_internal() {
        let down = RepoError::Unavailable(Box::new(std::io::Error::other("node down")));
        let err = Error::from(down);
        assert!(matches!(err, Error::Unavailable(_)), "{err:?}");
        assert_eq!(
            err.chain(),
            "unavailable: storage node unreachable: node down"
        );
    }

    #[test]
    fn a_failed_foreign_key_is_an_internal_error_by_default() {
        let gone = Error::from(RepoError::Gone("FOREIGN KEY constraint failed".into()));
        assert!(matches!(gone, Error::Internal { .. }), "{gone:?}");
    }

    #[test]
    fn internal_errors_keep_their_cause_chain() {
        let io = std::io::Error::other("disk on fire");
        let repo = RepoError::Backend(Box::new(io));
        let err = Error::from(repo);
        assert!(std::error::Error::source(&err).is_some(), "cause kept");
        assert_eq!(
            err.chain(),
            "internal error: storage: storage failure: disk on fire"
        );
        assert_eq!(Error::internal("x").chain(), "internal error: x");
    }
}
