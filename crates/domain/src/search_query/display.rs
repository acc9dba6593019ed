//! A query's canonical text (`Display`: minimal parentheses, every value quoted, times in RFC
//! 3339 UTC, parsing back to the same query) and a term's `Debug`, which redacts `data` and
//! metadata values.

use std::fmt;
use std::ops::Bound;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::{ContainerMatch, Expr, Query, Term, TimeRange};

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
