//! `req.svc`'s wire (docs/decisions.md §7): tenant code calls the token API as one
//! application, with the JSON the HTTP API speaks. The use case (`service/svc.rs`) decides
//! what a call may do and runs it; this port is the JSON at its edge — the arguments read into
//! a [`SvcCall`], the [`SvcAnswer`] and any failure written as the HTTP API would answer —
//! and the per-application rate limit the HTTP API counts, which code shares.

use serde_json::Value;
use uuid::Uuid;

use crate::area_error::TokenError;
use crate::page::{Page, PageRequest};
use crate::ports::TokenFilter;
use crate::token::RawTokenPatch;
use crate::token_new::RawNewToken;
use crate::token_view::{TokenView, Tokenized};

/// One call of `req.svc`. `Debug` names the method only: the arguments hold token data.
pub enum SvcCall {
    /// `tokens.create(body)`.
    Create(RawNewToken),
    /// `tokens.retrieve(id)`.
    Retrieve(String),
    /// `tokens.update(id, patch)`.
    Update(String, RawTokenPatch),
    /// `tokens.delete(id)`.
    Delete(String),
    /// `tokens.list(query)`.
    List(TokenFilter, PageRequest),
    /// `tokenize(body)`.
    Tokenize(Value),
    /// `detokenize(body)`.
    Detokenize(Value),
}

/// What a call answers. `Debug` names its kind only: it holds token data.
pub enum SvcAnswer {
    /// A token, as a read shows it.
    Token(Box<TokenView>),
    /// Nothing (a delete).
    Nothing,
    /// A page of tokens.
    Tokens(Page<TokenView>),
    /// Tokenize's answer.
    Tokenized(Tokenized),
    /// Detokenize's answer.
    Detokenized(Value),
}

impl std::fmt::Debug for SvcCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Create(_) => "tokens.create",
            Self::Retrieve(_) => "tokens.retrieve",
            Self::Update(..) => "tokens.update",
            Self::Delete(_) => "tokens.delete",
            Self::List(..) => "tokens.list",
            Self::Tokenize(_) => "tokenize",
            Self::Detokenize(_) => "detokenize",
        })
    }
}

impl std::fmt::Debug for SvcAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Token(_) => "Token",
            Self::Nothing => "Nothing",
            Self::Tokens(_) => "Tokens",
            Self::Tokenized(_) => "Tokenized",
            Self::Detokenized(_) => "Detokenized",
        })
    }
}

/// The JSON of `req.svc`, and the rate limit its calls count against. Every `Err` is the
/// problem body the code's promise rejects with.
pub trait SvcWire: Send + Sync {
    /// Counts one call of `application` against its rate limit.
    ///
    /// # Errors
    /// The limit is reached (429).
    fn admit(&self, application: Uuid) -> Result<(), Value>;

    /// The call `method` names, its arguments read.
    ///
    /// # Errors
    /// No such method, or arguments that are not what it takes (400 naming the argument).
    fn read(&self, method: &str, args: &[Value]) -> Result<SvcCall, Value>;

    /// The JSON of `answer`.
    fn write(&self, answer: SvcAnswer) -> Value;

    /// The problem body of `error`.
    fn problem(&self, error: TokenError) -> Value;
}
