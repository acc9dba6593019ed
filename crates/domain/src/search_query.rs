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

use time::format_description::well_known::Rfc3339;
use time::{Date, Month, OffsetDateTime, UtcOffset};
use uuid::Uuid;

use crate::container::Container;
use crate::token_type::TokenType;

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
        if text.len() > MAX_QUERY_LEN {
            return err(0, format!("the query is longer than {MAX_QUERY_LEN} bytes"));
        }
        let mut p = Parser {
            chars: text.chars().collect(),
            pos: 0,
            terms: 0,
            depth: 0,
        };
        p.skip_ws();
        if p.pos == p.chars.len() {
            return Ok(Query::All);
        }
        let expr = p.parse_or()?;
        p.skip_ws();
        if p.pos < p.chars.len() {
            return err(p.pos, "unexpected `)`");
        }
        if expr.to_string().len() > MAX_QUERY_LEN {
            return err(
                0,
                format!("the query is longer than {MAX_QUERY_LEN} bytes in canonical form"),
            );
        }
        Ok(Query::Expr(expr))
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

impl fmt::Debug for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Id(v) => f.debug_tuple("Id").field(v).finish(),
            Term::Type(t) => f.debug_tuple("Type").field(t).finish(),
            Term::Data(_) => f.write_str("Data(<redacted>)"),
            Term::Fingerprint(v) => f.debug_tuple("Fingerprint").field(v).finish(),
            Term::Container(c) => f.debug_tuple("Container").field(c).finish(),
            Term::Metadata { key, .. } => {
                write!(f, "Metadata {{ key: {key:?}, value: <redacted> }}")
            }
            Term::CreatedBy(u) => f.debug_tuple("CreatedBy").field(u).finish(),
            Term::ModifiedBy(u) => f.debug_tuple("ModifiedBy").field(u).finish(),
            Term::CreatedAt(r) => f.debug_tuple("CreatedAt").field(r).finish(),
            Term::ModifiedAt(r) => f.debug_tuple("ModifiedAt").field(r).finish(),
        }
    }
}

// ---- Display (canonical text; holds the values: not for logs) ----

/// `field:"value"`, escaped.
fn quoted(f: &mut fmt::Formatter<'_>, field: &str, value: &str) -> fmt::Result {
    write!(f, "{field}:\"")?;
    for c in value.chars() {
        if c == '"' || c == '\\' {
            f.write_str("\\")?;
        }
        write!(f, "{c}")?;
    }
    f.write_str("\"")
}

fn time_text(t: OffsetDateTime) -> Result<String, fmt::Error> {
    t.format(&Rfc3339).map_err(|_| fmt::Error)
}

impl fmt::Display for TimeRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.from {
            Bound::Unbounded => f.write_str("[*")?,
            Bound::Included(t) => write!(f, "[{}", time_text(t)?)?,
            Bound::Excluded(t) => write!(f, "{{{}", time_text(t)?)?,
        }
        f.write_str(" TO ")?;
        match self.to {
            Bound::Unbounded => f.write_str("*]"),
            Bound::Included(t) => write!(f, "{}]", time_text(t)?),
            Bound::Excluded(t) => write!(f, "{}}}", time_text(t)?),
        }
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Id(v) => quoted(f, "id", v),
            Term::Type(t) => write!(f, "type:\"{}\"", t.as_str()),
            Term::Data(v) => quoted(f, "data", v),
            Term::Fingerprint(v) => quoted(f, "fingerprint", v),
            Term::Container(ContainerMatch::Exact(c)) => write!(f, "container:\"{c}\""),
            Term::Container(ContainerMatch::Subtree(c)) => write!(f, "container:\"{c}*\""),
            Term::Metadata { key, value } => quoted(f, &format!("metadata.{key}"), value),
            Term::CreatedBy(u) => write!(f, "created_by:\"{u}\""),
            Term::ModifiedBy(u) => write!(f, "modified_by:\"{u}\""),
            Term::CreatedAt(r) => write!(f, "created_at:{r}"),
            Term::ModifiedAt(r) => write!(f, "modified_at:{r}"),
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Term(t) => write!(f, "{t}"),
            Expr::And(items) => {
                for (i, item) in items.iter().enumerate() {
                    let sep = if i == 0 { "" } else { " AND " };
                    match item {
                        Expr::Or(_) => write!(f, "{sep}({item})")?,
                        _ => write!(f, "{sep}{item}")?,
                    }
                }
                Ok(())
            }
            Expr::Or(items) => {
                for (i, item) in items.iter().enumerate() {
                    write!(f, "{}{item}", if i == 0 { "" } else { " OR " })?;
                }
                Ok(())
            }
            Expr::Not(inner) => match **inner {
                Expr::And(_) | Expr::Or(_) => write!(f, "NOT ({inner})"),
                _ => write!(f, "NOT {inner}"),
            },
        }
    }
}

impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Query::All => Ok(()),
            Query::Expr(e) => write!(f, "{e}"),
        }
    }
}

// ---- Parser ----

enum Field {
    Id,
    Type,
    Data,
    Fingerprint,
    Container,
    Metadata(String),
    CreatedBy,
    ModifiedBy,
    CreatedAt,
    ModifiedAt,
}

#[derive(PartialEq)]
enum Op {
    And,
    Or,
    Not,
}

/// A date as written: a whole UTC day (its start) or an instant.
enum Written {
    Day(OffsetDateTime),
    Instant(OffsetDateTime),
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    terms: usize,
    depth: usize,
}

fn is_word_char(c: char) -> bool {
    !(c.is_whitespace() || matches!(c, ':' | '(' | ')' | '"'))
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn word_end(&self) -> usize {
        let mut end = self.pos;
        while self.chars.get(end).is_some_and(|&c| is_word_char(c)) {
            end += 1;
        }
        end
    }

    /// The operator at the position and where it ends; a word followed by `:` is a field.
    fn peek_operator(&self) -> Option<(Op, usize)> {
        let end = self.word_end();
        if self.chars.get(end) == Some(&':') {
            return None;
        }
        let op = match &self.chars[self.pos..end] {
            ['A', 'N', 'D'] => Op::And,
            ['O', 'R'] => Op::Or,
            ['N', 'O', 'T'] => Op::Not,
            _ => return None,
        };
        Some((op, end))
    }

    fn parse_or(&mut self) -> Result<Expr, QueryError> {
        let mut items = vec![self.parse_and()?];
        loop {
            self.skip_ws();
            match self.peek_operator() {
                Some((Op::Or, end)) => {
                    self.pos = end;
                    items.push(self.parse_and()?);
                }
                _ => return Ok(Expr::join(items, false)),
            }
        }
    }

    fn parse_and(&mut self) -> Result<Expr, QueryError> {
        let mut items = vec![self.parse_unary()?];
        loop {
            self.skip_ws();
            if matches!(self.peek(), None | Some(')')) {
                break;
            }
            match self.peek_operator() {
                Some((Op::Or, _)) => break,
                Some((Op::And, end)) => self.pos = end,
                _ => {}
            }
            items.push(self.parse_unary()?);
        }
        Ok(Expr::join(items, true))
    }

    fn parse_unary(&mut self) -> Result<Expr, QueryError> {
        let mut negations = 0;
        loop {
            self.skip_ws();
            let start = self.pos;
            let is_not = if self.peek() == Some('-') {
                self.pos += 1;
                if self.peek().is_none_or(char::is_whitespace) {
                    return err(self.pos, "expected a term");
                }
                true
            } else {
                match self.peek_operator() {
                    Some((Op::Not, end)) => {
                        self.pos = end;
                        true
                    }
                    Some(_) => return err(start, "expected a term"),
                    None => false,
                }
            };
            if !is_not {
                break;
            }
            negations += 1;
            if negations > MAX_DEPTH {
                return err(start, format!("at most {MAX_DEPTH} `NOT` in a row"));
            }
        }
        let mut expr = self.parse_primary()?;
        for _ in 0..negations {
            expr = expr.negate();
        }
        Ok(expr)
    }

    fn parse_primary(&mut self) -> Result<Expr, QueryError> {
        if self.peek() != Some('(') {
            return self.parse_term().map(Expr::Term);
        }
        let open = self.pos;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return err(
                open,
                format!("parentheses nested more than {MAX_DEPTH} deep"),
            );
        }
        self.pos += 1;
        let expr = self.parse_or()?;
        self.skip_ws();
        if self.peek() != Some(')') {
            return err(self.pos, "expected `)`");
        }
        self.pos += 1;
        self.depth -= 1;
        Ok(expr)
    }

    fn parse_term(&mut self) -> Result<Term, QueryError> {
        let start = self.pos;
        let end = self.word_end();
        if end == start {
            return err(start, "expected a term");
        }
        self.terms += 1;
        if self.terms > MAX_TERMS {
            return err(start, format!("at most {MAX_TERMS} terms"));
        }
        let name: String = self.chars[start..end].iter().collect();
        if self.chars.get(end) != Some(&':') {
            if ["and", "or", "not"]
                .iter()
                .any(|w| name.eq_ignore_ascii_case(w))
            {
                return err(start, "operators must be upper-case: `AND`, `OR`, `NOT`");
            }
            return err(end, "expected `:` after the field name");
        }
        let field = field(&name, start)?;
        self.pos = end + 1;
        let at = self.pos;
        let term = if matches!(self.peek(), Some('[' | '{')) {
            match field {
                Field::CreatedAt => Term::CreatedAt(self.parse_range()?),
                Field::ModifiedAt => Term::ModifiedAt(self.parse_range()?),
                _ => return err(at, "a range is allowed only on created_at and modified_at"),
            }
        } else {
            let value = self.parse_value()?;
            term(field, value, at)?
        };
        if !self.peek().is_none_or(|c| c.is_whitespace() || c == ')') {
            return err(self.pos, "expected a space or `)` after the value");
        }
        Ok(term)
    }

    fn parse_value(&mut self) -> Result<String, QueryError> {
        let start = self.pos;
        let mut value = String::new();
        if self.peek() == Some('"') {
            self.pos += 1;
            loop {
                match self.peek() {
                    None => return err(start, "unterminated quoted value"),
                    Some('"') => break,
                    Some('\\') => {
                        match self.chars.get(self.pos + 1) {
                            Some(&c @ ('"' | '\\')) => value.push(c),
                            None => return err(start, "unterminated quoted value"),
                            Some(_) => return err(self.pos, "invalid escape in a quoted value"),
                        }
                        self.pos += 1;
                    }
                    Some(c) => value.push(c),
                }
                self.pos += 1;
            }
            self.pos += 1;
            if value.is_empty() {
                return err(start, "empty value");
            }
            return Ok(value);
        }
        while let Some(c) = self.peek() {
            if c.is_whitespace() || c == ')' {
                break;
            }
            if c == '(' || c == '"' {
                return err(
                    self.pos,
                    format!("`{c}` in an unquoted value (quote the value)"),
                );
            }
            value.push(c);
            self.pos += 1;
        }
        if value.is_empty() {
            return err(start, "expected a value");
        }
        Ok(value)
    }

    fn parse_range(&mut self) -> Result<TimeRange, QueryError> {
        let lower_inclusive = self.peek() == Some('[');
        self.pos += 1;
        self.skip_ws();
        let (lower, lower_at) = self.bound_token();
        self.skip_ws();
        if !(self.chars[self.pos..].starts_with(&['T', 'O'])
            && self
                .chars
                .get(self.pos + 2)
                .is_some_and(|c| c.is_whitespace()))
        {
            return err(self.pos, "`TO` expected in a range");
        }
        self.pos += 2;
        self.skip_ws();
        let (upper, upper_at) = self.bound_token();
        self.skip_ws();
        let upper_inclusive = match self.peek() {
            Some(']') => true,
            Some('}') => false,
            _ => return err(self.pos, "expected `]` or `}` to close the range"),
        };
        self.pos += 1;
        let from = match date_bound(&lower, lower_at)? {
            None => Bound::Unbounded,
            Some(Written::Day(d)) if lower_inclusive => Bound::Included(d),
            Some(Written::Day(d)) => Bound::Included(next_day(d, lower_at)?),
            Some(Written::Instant(t)) if lower_inclusive => Bound::Included(t),
            Some(Written::Instant(t)) => Bound::Excluded(t),
        };
        let to = match date_bound(&upper, upper_at)? {
            None => Bound::Unbounded,
            Some(Written::Day(d)) if upper_inclusive => Bound::Excluded(next_day(d, upper_at)?),
            Some(Written::Day(d)) => Bound::Excluded(d),
            Some(Written::Instant(t)) if upper_inclusive => Bound::Included(t),
            Some(Written::Instant(t)) => Bound::Excluded(t),
        };
        Ok(TimeRange { from, to })
    }

    /// A range bound as written and where it starts.
    fn bound_token(&mut self) -> (String, usize) {
        let start = self.pos;
        while self.peek().is_some_and(|c| {
            !(c.is_whitespace() || matches!(c, '(' | ')' | '"' | '[' | ']' | '{' | '}'))
        }) {
            self.pos += 1;
        }
        (self.chars[start..self.pos].iter().collect(), start)
    }
}

fn field(name: &str, at: usize) -> Result<Field, QueryError> {
    Ok(match name {
        "id" => Field::Id,
        "type" => Field::Type,
        "data" => Field::Data,
        "fingerprint" => Field::Fingerprint,
        "container" => Field::Container,
        "created_by" => Field::CreatedBy,
        "modified_by" => Field::ModifiedBy,
        "created_at" => Field::CreatedAt,
        "modified_at" => Field::ModifiedAt,
        _ => match name.strip_prefix("metadata.") {
            Some(key) if key.chars().count() > MAX_METADATA_KEY_LEN => {
                return err(
                    at,
                    format!("a metadata key is at most {MAX_METADATA_KEY_LEN} characters"),
                );
            }
            Some(key) if !key.is_empty() => Field::Metadata(key.to_owned()),
            // The name is never echoed: a value typed where a field belongs may be secret.
            _ => return err(at, "unknown field"),
        },
    })
}

fn term(field: Field, value: String, at: usize) -> Result<Term, QueryError> {
    let uuid = |v: &str| Uuid::parse_str(v).or_else(|_| err(at, "not a UUID"));
    Ok(match field {
        Field::Id => Term::Id(value),
        Field::Data => Term::Data(value),
        Field::Fingerprint => Term::Fingerprint(value),
        Field::Metadata(key) => Term::Metadata { key, value },
        Field::Type => match TokenType::parse(&value) {
            Some(t) => Term::Type(t),
            None => return err(at, "not a known token type"),
        },
        Field::CreatedBy => Term::CreatedBy(uuid(&value)?),
        Field::ModifiedBy => Term::ModifiedBy(uuid(&value)?),
        Field::Container => {
            let (path, subtree) = match value.strip_suffix('*') {
                Some("") => ("/", true),
                Some(rest) => (rest, true),
                None => (value.as_str(), false),
            };
            let c = Container::parse(path).or_else(|m| err(at, format!("not a container: {m}")))?;
            Term::Container(if subtree {
                ContainerMatch::Subtree(c)
            } else {
                ContainerMatch::Exact(c)
            })
        }
        Field::CreatedAt | Field::ModifiedAt => {
            let range = match date_bound(&value, at)? {
                None => return err(at, "not a date"),
                Some(Written::Day(d)) => TimeRange {
                    from: Bound::Included(d),
                    to: Bound::Excluded(next_day(d, at)?),
                },
                Some(Written::Instant(t)) => TimeRange {
                    from: Bound::Included(t),
                    to: Bound::Included(t),
                },
            };
            if matches!(field, Field::CreatedAt) {
                Term::CreatedAt(range)
            } else {
                Term::ModifiedAt(range)
            }
        }
    })
}

/// `*` (`None`), a `YYYY-MM-DD` day or an RFC 3339 instant, in UTC within years 0000-9999.
fn date_bound(text: &str, at: usize) -> Result<Option<Written>, QueryError> {
    if text == "*" {
        return Ok(None);
    }
    if text.is_empty() {
        return err(at, "expected a date");
    }
    let parsed = match plain_day(text) {
        Some(day) => Some(Written::Day(day.midnight().assume_utc())),
        None => OffsetDateTime::parse(text, &Rfc3339)
            .ok()
            .and_then(|t| t.checked_to_offset(UtcOffset::UTC))
            .map(Written::Instant),
    };
    match parsed {
        None => err(at, "not a date"),
        Some(Written::Day(t) | Written::Instant(t)) if !(0..=9999).contains(&t.year()) => {
            err(at, "date out of range")
        }
        Some(d) => Ok(Some(d)),
    }
}

fn plain_day(text: &str) -> Option<Date> {
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        b[r].iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let year = i32::try_from(digits(0..4)?).ok()?;
    let month = Month::try_from(u8::try_from(digits(5..7)?).ok()?).ok()?;
    Date::from_calendar_date(year, month, u8::try_from(digits(8..10)?).ok()?).ok()
}

fn next_day(start: OffsetDateTime, at: usize) -> Result<OffsetDateTime, QueryError> {
    match start.date().next_day() {
        Some(d) if d.year() <= 9999 => Ok(d.midnight().assume_utc()),
        _ => err(at, "date out of range"),
    }
}

#[cfg(test)]
#[path = "search_query_tests.rs"]
mod tests;
