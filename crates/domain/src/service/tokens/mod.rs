//! Token use cases: create, read, update, delete, list, tokenize, detokenize, associations and
//! the usage report. Access is evaluated per token (docs/decisions.md §4); data is encrypted before it
//! reaches storage and decrypted only to be shown under the caller's transform.

pub use crate::token_view::{TokenView, Tokenized};

/// At most this many tokens per detokenize request.
pub const MAX_DETOKENIZE: usize = 100;
/// At most this many bytes of token data substituted into one detokenize answer (an id may
/// occur many times in a body).
pub const MAX_DETOKENIZED_BYTES: usize = 10 << 20;
/// Attempts at a unique id from an alias expression.
const ALIAS_ATTEMPTS: usize = 5;

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
