//! Row codecs: how a table's rows become the domain's values and back, the lowest layer of the
//! adapter (it imports no repository, engine or query module; they import it). One file per
//! table the fast paths read or write: `activity.rs`, `application.rs`, `audit_entry.rs`,
//! `tenant.rs`, `token.rs`, `proxy.rs`, `reactor.rs` (formulas and reactors). The SeaORM entity
//! (`entity/`) is each table's one column list: SeaORM's queries read it, and the fast paths'
//! statements select or insert [`columns`] of it, in its order, which is the order in which the
//! table's `from_sqlite` reads a rusqlite row through [`Fields`] and its `put` writes one
//! through [`write::put_row`] (checked in debug builds, both ways). Here: those two, and the
//! column readers, which read values as sqlx stored them.

pub mod activity;
pub mod application;
pub mod audit_entry;
pub mod copy;
pub mod proxy;
pub mod reactor;
pub mod tenant;
pub mod token;
pub mod write;

use rusqlite::Row;
use rusqlite::types::FromSql;
use sea_orm::{Iden, Iterable};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

/// The error of column `index` whose stored value is not a `what`.
pub fn corrupt(index: usize, what: &'static str) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, what.into())
}

/// A UUID as sqlx stores it on SQLite: 16 bytes.
fn uuid_of(index: usize, bytes: &[u8]) -> rusqlite::Result<Uuid> {
    Uuid::from_slice(bytes).map_err(|_| corrupt(index, "stored uuid is not 16 bytes"))
}

/// A timestamp as sqlx stores it on SQLite: RFC 3339 text (fixed width, `stamp.rs`).
fn time_of(index: usize, text: &str) -> rusqlite::Result<OffsetDateTime> {
    OffsetDateTime::parse(text, &Rfc3339)
        .map_err(|_| corrupt(index, "stored timestamp is unreadable"))
}

fn uuid_at(row: &Row<'_>, index: usize) -> rusqlite::Result<Uuid> {
    uuid_of(index, &row.get::<_, Vec<u8>>(index)?)
}

fn opt_uuid_at(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<Uuid>> {
    let bytes: Option<Vec<u8>> = row.get(index)?;
    bytes.map(|b| uuid_of(index, &b)).transpose()
}

fn time_at(row: &Row<'_>, index: usize) -> rusqlite::Result<OffsetDateTime> {
    time_of(index, &row.get::<_, String>(index)?)
}

fn opt_time_at(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<OffsetDateTime>> {
    let text: Option<String> = row.get(index)?;
    text.map(|t| time_of(index, &t)).transpose()
}

/// The columns of an entity in its order, less those in `skip` (never read or written by a
/// fast path: a tenant's wrapped data key).
pub fn kept<C: Iterable + Iden>(skip: &[C]) -> impl Iterator<Item = C> {
    let skipped: Vec<String> = skip.iter().map(Iden::to_string).collect();
    C::iter().filter(move |c| !skipped.contains(&c.to_string()))
}

/// [`kept`] columns, each as `alias.column` when `alias` is given.
pub fn columns<C: Iterable + Iden>(alias: Option<&str>, skip: &[C]) -> String {
    kept(skip)
        .map(|c| match alias {
            Some(alias) => format!("{alias}.{}", c.to_string()),
            None => c.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// How many columns [`columns`] lists for an entity, less `skip`.
pub(crate) fn column_count<C: Iterable + Iden>(skip: &[C]) -> usize {
    C::iter().count() - skip.len()
}

/// One SQLite parameter per column [`columns`] lists: `?1, ?2, …`.
pub fn sqlite_marks<C: Iterable + Iden>(skip: &[C]) -> String {
    (1..=column_count::<C>(skip))
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A row that holds one table's columns alone, read with that table's `codec`.
pub fn whole<T>(
    row: &Row<'_>,
    codec: impl FnOnce(&mut Fields<'_, '_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    codec(&mut Fields::new(row, 0))
}

/// A rusqlite row read column after column from `next` on, in the order of [`columns`].
pub struct Fields<'a, 'r> {
    row: &'a Row<'r>,
    next: usize,
}

impl<'a, 'r> Fields<'a, 'r> {
    /// The row's columns from `at` on.
    pub fn new(row: &'a Row<'r>, at: usize) -> Self {
        Self { row, next: at }
    }

    /// The next column's index; in debug builds (every test) checks that the statement's
    /// column there is `column`, so a codec that reads its fields in another order than its
    /// entity lists them fails.
    fn take(&mut self, column: &impl Iden) -> usize {
        let at = self.next;
        self.next += 1;
        debug_assert_eq!(
            self.row.as_ref().column_name(at).ok(),
            Some(column.to_string().as_str()),
            "a row codec out of step with its entity at column {at}"
        );
        at
    }

    /// Reads one table's columns with `codec`; in debug builds (every test) checks that it read
    /// as many as the entity lists less `skip`, so a codec out of step with its entity fails.
    pub fn table<C: Iterable + Iden, T>(
        &mut self,
        skip: &[C],
        codec: impl FnOnce(&mut Self) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        let start = self.next;
        let value = codec(self)?;
        debug_assert_eq!(
            self.next - start,
            column_count::<C>(skip),
            "a row codec out of step with its entity"
        );
        Ok(value)
    }

    /// Passes over one table's columns (a `LEFT JOIN` that found no row), as many as the
    /// entity lists.
    pub fn skip<C: Iterable + Iden>(&mut self) {
        self.next += column_count::<C>(&[]);
    }

    /// Whether the column `ahead` places further on is NULL (a `LEFT JOIN` that found no row).
    pub fn is_null_ahead(&self, ahead: usize) -> rusqlite::Result<bool> {
        Ok(matches!(
            self.row.get_ref(self.next + ahead)?,
            rusqlite::types::ValueRef::Null
        ))
    }

    /// The next column, named `column`, as `T`.
    pub fn get<T: FromSql>(&mut self, column: impl Iden) -> rusqlite::Result<T> {
        let at = self.take(&column);
        self.row.get(at)
    }

    /// The next column, named `column`, as a UUID (16 bytes).
    pub fn uuid(&mut self, column: impl Iden) -> rusqlite::Result<Uuid> {
        let at = self.take(&column);
        uuid_at(self.row, at)
    }

    /// The next column, named `column`, as a UUID or NULL.
    pub(crate) fn opt_uuid(&mut self, column: impl Iden) -> rusqlite::Result<Option<Uuid>> {
        let at = self.take(&column);
        opt_uuid_at(self.row, at)
    }

    /// The next column, named `column`, as a stamped time.
    pub fn time(&mut self, column: impl Iden) -> rusqlite::Result<OffsetDateTime> {
        let at = self.take(&column);
        time_at(self.row, at)
    }

    /// The next column, named `column`, as a stamped time or NULL.
    pub(crate) fn opt_time(
        &mut self,
        column: impl Iden,
    ) -> rusqlite::Result<Option<OffsetDateTime>> {
        let at = self.take(&column);
        opt_time_at(self.row, at)
    }
}
