//! Token use cases: create, read, update, delete, list, tokenize, detokenize, associations and
//! the usage report. Access is evaluated per token (docs/decisions.md §4); data is encrypted before it
//! reaches storage and decrypted only to be shown under the caller's transform.

use serde_json::Value;

use crate::token::Token;

/// At most this many tokens per detokenize request.
pub const MAX_DETOKENIZE: usize = 100;
/// At most this many bytes of token data substituted into one detokenize answer (an id may
/// occur many times in a body).
pub const MAX_DETOKENIZED_BYTES: usize = 10 << 20;
/// Attempts at a unique id from an alias expression.
const ALIAS_ATTEMPTS: usize = 5;

/// A token as a response shows it: `data` only when the caller's transform allows. `Debug`
/// prints neither the data nor what is shown of it.
#[derive(Clone)]
pub struct TokenView {
    /// The token (its `data` field is never shown directly).
    pub token: Token,
    /// What the response carries as `data`.
    pub shown: Option<Value>,
}

impl std::fmt::Debug for TokenView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenView")
            .field("token", &self.token)
            .field("shown", &self.shown.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// The result of tokenize: the request's shape with tokens in place of values.
#[derive(Clone, Debug)]
pub enum Tokenized {
    /// An object with `type` and `data` became this token.
    Token(Box<TokenView>),
    /// A scalar leaf became a `token` with this id.
    Id(String),
    /// An array of results.
    Array(Vec<Tokenized>),
    /// An object of results, keys in request order.
    Object(Vec<(String, Tokenized)>),
    /// Kept as it was (null).
    Keep(Value),
}

/// At most this many tokens in one `POST /tokenize`.
pub const MAX_TOKENIZE: usize = 1_000;

mod associations;
mod create;
mod delete;
mod detokenize;
mod indexing;
mod read;
pub(crate) use read::may_be_stored;
mod sealing;
mod search;
mod tokenize;
mod update;

pub(crate) use detokenize::{DetokenizeAs, ReadAhead, Used, active, wanted_ids};
pub use read::MAX_ID_FILTERS;
