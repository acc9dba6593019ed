//! Row codecs: how a table's rows become the domain's values and back, the lowest layer of the
//! adapter (it imports no repository, engine or query module; they import it). One file per
//! table: `application.rs`, `tenant.rs`, `token.rs`. Here: the column readers of SQLite's
//! direct reads (rusqlite), which read values as sqlx stored them.

pub(crate) mod application;
pub(crate) mod tenant;
pub(crate) mod token;

use rusqlite::Row;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

pub(crate) fn corrupt(index: usize, what: &'static str) -> rusqlite::Error {
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

pub(crate) fn uuid_at(row: &Row<'_>, index: usize) -> rusqlite::Result<Uuid> {
    uuid_of(index, &row.get::<_, Vec<u8>>(index)?)
}

pub(crate) fn opt_uuid_at(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<Uuid>> {
    let bytes: Option<Vec<u8>> = row.get(index)?;
    bytes.map(|b| uuid_of(index, &b)).transpose()
}

pub(crate) fn time_at(row: &Row<'_>, index: usize) -> rusqlite::Result<OffsetDateTime> {
    time_of(index, &row.get::<_, String>(index)?)
}

pub(crate) fn opt_time_at(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<OffsetDateTime>> {
    let text: Option<String> = row.get(index)?;
    text.map(|t| time_of(index, &t)).transpose()
}
