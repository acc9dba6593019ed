//! The errors of the areas that fail in ways of their own, beyond the failures every use case
//! shares ([`Error`]): token writes meet stored tokens (an id taken, an identical token, an
//! association), reactors run tenant code, proxies run it and call out. Each area's use cases
//! that can fail so return its enum; the others (applications, sessions, tenants, the audit
//! log, usage) fail only in the shared ways and return [`Error`]. The inbound adapter alone
//! decides what each becomes on the wire.

use serde_json::Value;

use crate::error::Error;

/// Why tenant code (a reactor, a proxy's transform) failed.
#[derive(Debug)]
pub enum CodeFailure {
    /// The code threw: one of the runtime's error classes or any other value. `status` is the
    /// one the class stands for (docs/decisions.md §7), as the code chose it, unchecked;
    /// `detail` the message, in the tenant's own words; `errors` the class's constructor
    /// argument.
    Thrown {
        /// The class's status, as the code chose it.
        status: u16,
        /// The message.
        detail: String,
        /// The constructor argument, if any.
        errors: Option<Value>,
    },
    /// `CustomHttpResponseError`: the response the code asked for, as it asked (unchecked).
    Custom {
        /// The status it asked for.
        status: u16,
        /// Headers (an object of strings).
        headers: Value,
        /// Body (any JSON).
        body: Value,
    },
    /// A sandbox limit was reached (time, memory, output), or what the code threw was larger
    /// than 1 MiB: which.
    Limit(String),
    /// Every code worker is busy: the call may be tried again.
    Busy,
    /// A transform returned what cannot be used (its headers, its status): what.
    Unusable(String),
}

/// Why a proxy's destination could not be used. The policy's reason for a refusal (what a
/// name resolved to) is logged, never carried here: it describes the inside network.
#[derive(Debug)]
pub enum DestinationFailure {
    /// The destination policy refuses it; nothing was sent.
    Refused,
    /// It could not be reached, or the exchange failed: what happened.
    Unreachable(String),
    /// It did not answer in time.
    TimedOut,
}

/// The error of the token writes: create, update, tokenize, associations and child tokens.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// A failure every use case can have.
    #[error(transparent)]
    Failed(#[from] Error),
    /// A token with the id asked for exists (for an alias: with every id drawn).
    #[error("a token with this id exists")]
    IdTaken,
    /// One tokenize request names the same id twice.
    #[error("the request names one token id twice")]
    IdRepeated,
    /// A token with the same deduplication key exists and cannot be returned instead.
    #[error("an identical token exists")]
    IdenticalExists,
    /// Another writer changed the token under every attempt of an update.
    #[error("the token changed while it was being updated")]
    Changed,
    /// The two tokens are associated already.
    #[error("the tokens are associated already")]
    AssociationExists,
}

/// The error of the reactor area: a reactor's invocation, and a formula's delete.
#[derive(Debug, thiserror::Error)]
pub enum ReactorError {
    /// A failure every use case can have.
    #[error(transparent)]
    Failed(#[from] Error),
    /// The reactor's code failed.
    #[error("reactor code failed")]
    Code(CodeFailure),
    /// What the reactor returned under `tokenize` could not be stored.
    #[error("the reactor's tokens could not be stored")]
    Tokenize(TokenError),
    /// A reactor still uses the formula being deleted.
    #[error("a reactor uses the formula")]
    FormulaInUse,
}

/// The error of a proxy invocation.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// A failure every use case can have.
    #[error(transparent)]
    Failed(#[from] Error),
    /// A transform's code failed.
    #[error("transform code failed")]
    Code(CodeFailure),
    /// The destination could not be used.
    #[error("destination failed")]
    Destination(DestinationFailure),
}

impl From<CodeFailure> for ReactorError {
    fn from(failure: CodeFailure) -> Self {
        Self::Code(failure)
    }
}

impl From<CodeFailure> for ProxyError {
    fn from(failure: CodeFailure) -> Self {
        Self::Code(failure)
    }
}

impl From<TokenError> for ReactorError {
    fn from(err: TokenError) -> Self {
        match err {
            TokenError::Failed(e) => Self::Failed(e),
            conflict => Self::Tokenize(conflict),
        }
    }
}

impl From<crate::RepoError> for TokenError {
    fn from(err: crate::RepoError) -> Self {
        Self::Failed(err.into())
    }
}

impl From<crate::RepoError> for ReactorError {
    fn from(err: crate::RepoError) -> Self {
        Self::Failed(err.into())
    }
}

impl From<crate::RepoError> for ProxyError {
    fn from(err: crate::RepoError) -> Self {
        Self::Failed(err.into())
    }
}
