//! The query text parsed ([`Query::parse`]): a recursive descent over its characters, with
//! the limits of the grammar (module docs) checked as it goes.

use std::ops::Bound;

use time::format_description::well_known::Rfc3339;
use time::{Date, Month, OffsetDateTime, UtcOffset};
use uuid::Uuid;

use super::{
    ContainerMatch, Expr, MAX_DEPTH, MAX_METADATA_KEY_LEN, MAX_QUERY_LEN, MAX_TERMS, Query,
    QueryError, Term, TimeRange, err,
};
use crate::container::Container;
use crate::token_type::TokenType;

/// [`Query::parse`].
pub(super) fn parse(text: &str) -> Result<Query, QueryError> {
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
    // Compared as they are written, never hashed: no stored id or fingerprint holds a control
    // character, and PostgreSQL refuses a NUL in text (a 500 before; attack review of 940c02f).
    if matches!(field, Field::Id | Field::Fingerprint) && value.chars().any(char::is_control) {
        return err(at, "a control character in an id or fingerprint");
    }
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
