//! What a caller is shown of a token: the token with its data only under the caller's
//! transform ([`TokenView`]), and tokenize's answer in the request's shape ([`Tokenized`]).
//! Values of their own (not of the token use cases that make them), so that the ports that
//! carry them, `req.svc`'s wire among them, need not name the use cases.

use serde_json::Value;

use crate::token::Token;

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
