//! The token search query language of `POST /tokens/search`: parsed into an [`Expr`] tree the
//! persistence adapter turns into SQL.
//!
//! Grammar and decisions:
//! - A term is `field:value`. Terms combine with the upper-case words `AND`, `OR`, `NOT` only
//!   (lower-case `and` is an error, as in Lucene); two terms side by side are joined by `AND`.
//!   `NOT` and a `-` written directly before a term or `(` bind tightest, then `AND`, then `OR`;
//!   parentheses group. A word `AND`/`OR`/`NOT` directly followed by `:` is a field name.
//! - A value is a double-quoted string (`\"` and `\\` are the only escapes) or an unquoted run up
//!   to whitespace or `)` that may not hold `(` or `"` (it may hold `:`). Values are never empty.
//!   After a value comes whitespace, `)` or the end.
//! - Fields (case-sensitive): `id`, `type`, `data`, `fingerprint`, `container`, `created_by`,
//!   `modified_by`, `created_at`, `modified_at`, `metadata.<key>` (key: 1 to 128 characters, no
//!   whitespace, `:`, `(`, `)`, `"`). `type` must be a token type, `*_by` a UUID, `container` a
//!   container (exact) or one followed by `*` (its subtree; `*` alone is the root's subtree).
//!   Quoting never changes a value's meaning.
//! - `created_at`/`modified_at` take a date or a range `[a TO b]` (`[`/`]` inclusive, `{`/`}`
//!   exclusive, mixable; `*` is open). A date is RFC 3339 (converted to UTC) or `YYYY-MM-DD` (a UTC
//!   day). A single day is that whole day, a single instant exactly that instant. As a bound, a day
//!   stands for its start, except an inclusive upper bound (up to the end of the day) and an
//!   exclusive lower bound (from the next day's start). Years must stay within 0000-9999.
//! - Limits: the text at most [`MAX_QUERY_LEN`] bytes (checked first), at most [`MAX_TERMS`]
//!   terms, parentheses at most [`MAX_DEPTH`] deep, at most [`MAX_DEPTH`] `NOT`/`-` in a row.
//! - Normal form: nested `And`/`Or` of the same kind are flattened and `NOT NOT x` is `x`.
//! - An empty (or blank) query is [`Query::All`].
//! - Errors carry the 0-based character position and a short message; they may name a field but
//!   never a value (values may be secret). `Debug` of a term redacts `data` and metadata values.
//! - `Display` is a canonical text that parses back to the same query (minimal parentheses, every
//!   value quoted, times in RFC 3339 UTC). A query whose canonical text would exceed
//!   [`MAX_QUERY_LEN`] is refused, so that round trip always holds.

use std::fmt;
use std::ops::Bound;

use time::OffsetDateTime;
use uuid::Uuid;

use crate::container::Container;
use crate::token_type::TokenType;

mod display;
mod parser;

/// The most terms a query may hold.
pub const MAX_TERMS: usize = 10;
/// The longest query text, in bytes.
pub const MAX_QUERY_LEN: usize = 4096;
/// The deepest parenthesis nesting, and the longest run of `NOT`/`-`.
pub const MAX_DEPTH: usize = 10;
/// The longest metadata key, in characters.
pub const MAX_METADATA_KEY_LEN: usize = 128;

/// A parsed query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Query {
    /// The empty query: every token the caller may search.
    All,
    /// Tokens matching the expression.
    Expr(Expr),
}

/// A boolean expression over terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// One term.
    Term(Term),
    /// All of two or more expressions (never directly holding another `And`).
    And(Vec<Expr>),
    /// Any of two or more expressions (never directly holding another `Or`).
    Or(Vec<Expr>),
    /// The negation of an expression (never directly holding another `Not`).
    Not(Box<Expr>),
}

/// One `field:value` condition. `Display` gives its canonical text, value included (not for
/// logs); `Debug` redacts `data` and metadata values.
#[derive(Clone, PartialEq, Eq)]
pub enum Term {
    /// The token id, exactly.
    Id(String),
    /// The token type.
    Type(TokenType),
    /// The evaluated search index equals the value, case-insensitively (folded where it is
    /// hashed: `search_index::data_term_input`).
    Data(String),
    /// The fingerprint, exactly.
    Fingerprint(String),
    /// The container.
    Container(ContainerMatch),
    /// The metadata value under `key` equals `value`, case-insensitively.
    Metadata {
        /// The metadata key, exactly.
        key: String,
        /// The value as written.
        value: String,
    },
    /// The creator.
    CreatedBy(Uuid),
    /// The last modifier.
    ModifiedBy(Uuid),
    /// The creation time lies in the range.
    CreatedAt(TimeRange),
    /// The modification time lies in the range.
    ModifiedAt(TimeRange),
}

/// How a `container` term matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContainerMatch {
    /// Exactly this container.
    Exact(Container),
    /// This container or any below it.
    Subtree(Container),
}

/// A time range; every bound is in UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeRange {
    /// The lower bound.
    pub from: Bound<OffsetDateTime>,
    /// The upper bound.
    pub to: Bound<OffsetDateTime>,
}

/// Why a query was refused. Never holds a value from the query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryError {
    /// 0-based character offset where the problem starts (the end is the number of characters).
    pub position: usize,
    /// What is wrong, in lower case.
    pub message: String,
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at position {}: {}", self.position, self.message)
    }
}

impl std::error::Error for QueryError {}

fn err<T>(position: usize, message: impl Into<String>) -> Result<T, QueryError> {
    Err(QueryError {
        position,
        message: message.into(),
    })
}

impl Query {
    /// Parses a query text.
    pub fn parse(text: &str) -> Result<Query, QueryError> {
        parser::parse(text)
    }
}

impl Expr {
    /// Every term, left to right.
    pub fn terms(&self) -> Vec<&Term> {
        let mut out = Vec::new();
        self.collect_terms(&mut out);
        out
    }

    fn collect_terms<'a>(&'a self, out: &mut Vec<&'a Term>) {
        match self {
            Expr::Term(t) => out.push(t),
            Expr::And(items) | Expr::Or(items) => items.iter().for_each(|e| e.collect_terms(out)),
            Expr::Not(inner) => inner.collect_terms(out),
        }
    }

    /// The negation in normal form (`NOT NOT x` is `x`).
    fn negate(self) -> Expr {
        match self {
            Expr::Not(inner) => *inner,
            other => Expr::Not(Box::new(other)),
        }
    }

    /// `items` joined by AND (`and`) or OR, flattened; a single item stands alone.
    fn join(mut items: Vec<Expr>, and: bool) -> Expr {
        if items.len() == 1 {
            return items.remove(0);
        }
        let mut flat = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Expr::And(inner) if and => flat.extend(inner),
                Expr::Or(inner) if !and => flat.extend(inner),
                other => flat.push(other),
            }
        }
        if and { Expr::And(flat) } else { Expr::Or(flat) }
    }
}

#[cfg(test)]
mod tests;
