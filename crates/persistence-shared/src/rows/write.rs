//! The write half of the row codecs: a table's codec ([`put_row`]) hands a row's values over
//! one column at a time, named by the entity's column, and a sink takes them as its driver binds
//! them: rusqlite values ([`SqliteValues`]), sqlx arguments ([`PgValues`]), one sqlx array per
//! column for an `UNNEST` of many rows ([`PgArrays`]), binary `COPY` data (`copy.rs`). So a
//! table's values are listed once, in its codec, whichever backend and statement writes them;
//! the statement's columns come from the entity ([`super::columns`], `pg_types`).
//!
//! In debug builds (every test) each value's column is checked against the entity's order, as
//! [`super::Fields`] checks each read: a codec out of step with its entity fails.

use sea_orm::sea_query::{ColumnType, StringLen};
use sea_orm::sqlx::postgres::{PgArguments, Postgres};
use sea_orm::sqlx::{Arguments, Encode, Type};
use sea_orm::{ColumnTrait, Iden, Iterable};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{column_count, kept};

/// Why a value could not be taken (a timestamp past year 9999, a field over 2 GiB).
pub type WriteError = Box<dyn std::error::Error + Send + Sync>;

/// One value of a row being written, typed as its column stores it.
#[derive(Debug, Clone, Copy)]
pub enum Cell<'a> {
    /// A UUID, or NULL.
    Uuid(Option<Uuid>),
    /// Text, or NULL.
    Text(Option<&'a str>),
    /// Bytes, or NULL.
    Bytes(Option<&'a [u8]>),
    /// An integer.
    Int(i64),
    /// A time, or NULL.
    Time(Option<OffsetDateTime>),
    /// A boolean, or NULL.
    Bool(Option<bool>),
}

/// Where a codec's values go.
pub trait Sink<'a> {
    /// A row of `width` values begins.
    fn start_row(&mut self, _width: usize) -> Result<(), WriteError> {
        Ok(())
    }

    /// The row's next value.
    fn put(&mut self, cell: Cell<'a>) -> Result<(), WriteError>;
}

/// A row being written by its table's codec: each value named by its column.
pub struct Put<'s, 'a, C> {
    sink: &'s mut dyn Sink<'a>,
    skip: &'s [C],
    at: usize,
    failed: Option<WriteError>,
}

impl<'a, C: Iterable + Iden> Put<'_, 'a, C> {
    /// Column `column`'s value: a UUID.
    pub fn uuid(&mut self, column: C, value: Uuid) {
        self.cell(&column, Cell::Uuid(Some(value)));
    }

    /// Column `column`'s value: a UUID or NULL.
    pub(crate) fn opt_uuid(&mut self, column: C, value: Option<Uuid>) {
        self.cell(&column, Cell::Uuid(value));
    }

    /// Column `column`'s value: text.
    pub fn text(&mut self, column: C, value: &'a str) {
        self.cell(&column, Cell::Text(Some(value)));
    }

    /// Column `column`'s value: text or NULL.
    pub(crate) fn opt_text(&mut self, column: C, value: Option<&'a str>) {
        self.cell(&column, Cell::Text(value));
    }

    /// Column `column`'s value: bytes.
    pub fn bytes(&mut self, column: C, value: &'a [u8]) {
        self.cell(&column, Cell::Bytes(Some(value)));
    }

    /// Column `column`'s value: bytes or NULL.
    pub(crate) fn opt_bytes(&mut self, column: C, value: Option<&'a [u8]>) {
        self.cell(&column, Cell::Bytes(value));
    }

    /// Column `column`'s value: an integer.
    pub(crate) fn int(&mut self, column: C, value: i64) {
        self.cell(&column, Cell::Int(value));
    }

    /// Column `column`'s value: a time.
    pub fn time(&mut self, column: C, value: OffsetDateTime) {
        self.cell(&column, Cell::Time(Some(value)));
    }

    /// Column `column`'s value: a time or NULL.
    pub(crate) fn opt_time(&mut self, column: C, value: Option<OffsetDateTime>) {
        self.cell(&column, Cell::Time(value));
    }

    /// Column `column`'s value: a boolean or NULL.
    pub(crate) fn opt_bool(&mut self, column: C, value: Option<bool>) {
        self.cell(&column, Cell::Bool(value));
    }

    fn cell(&mut self, column: &C, cell: Cell<'a>) {
        debug_assert_eq!(
            Some(column.to_string()),
            kept(self.skip).nth(self.at).map(|c| c.to_string()),
            "a row codec out of step with its entity at column {}",
            self.at
        );
        self.at += 1;
        if self.failed.is_none()
            && let Err(e) = self.sink.put(cell)
        {
            self.failed = Some(e);
        }
    }
}

/// Writes one row into `sink` with `codec`: every column of the entity less `skip`, in its
/// order (checked in debug builds).
pub fn put_row<'a, C: Iterable + Iden>(
    sink: &mut dyn Sink<'a>,
    skip: &[C],
    codec: impl FnOnce(&mut Put<'_, 'a, C>),
) -> Result<(), WriteError> {
    let width = column_count::<C>(skip);
    sink.start_row(width)?;
    let mut row = Put {
        sink,
        skip,
        at: 0,
        failed: None,
    };
    codec(&mut row);
    debug_assert_eq!(row.at, width, "a row codec out of step with its entity");
    if row.at != width {
        // Never silently: an array one value short would shift every later row's values.
        return Err("a row codec out of step with its entity".into());
    }
    row.failed.map_or(Ok(()), Err)
}

/// The PostgreSQL type of each column of an entity less `skip`, in its order: the casts of an
/// `UNNEST` of one array per column.
pub(crate) fn pg_types<C: Iterable + Iden + ColumnTrait>(skip: &[C]) -> Vec<&'static str> {
    kept(skip)
        .map(|c| pg_type(c.def().get_column_type()))
        .collect()
}

/// The parameters of one row of an entity's columns less `skip`, each cast to its column's type
/// followed by `suffix`: `$1::uuid, $2::varchar, …`, or with `[]` one array per column.
pub fn pg_params<C: Iterable + Iden + ColumnTrait>(skip: &[C], suffix: &str) -> String {
    pg_types::<C>(skip)
        .iter()
        .enumerate()
        .map(|(i, t)| format!("${}::{t}{suffix}", i + 1))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The types the entities use; any other is named `unknown`, which PostgreSQL refuses when the
/// statement is prepared (every such statement runs in the tests).
fn pg_type(column: &ColumnType) -> &'static str {
    match column {
        ColumnType::Uuid => "uuid",
        ColumnType::String(StringLen::None) => "varchar",
        ColumnType::Text => "text",
        ColumnType::Binary(_) | ColumnType::VarBinary(_) | ColumnType::Blob => "bytea",
        ColumnType::BigInteger => "int8",
        ColumnType::Integer => "int4",
        ColumnType::SmallInteger => "int2",
        ColumnType::Boolean => "bool",
        ColumnType::TimestampWithTimeZone => "timestamptz",
        _ => "unknown",
    }
}

/// Values as rusqlite binds them, as sqlx stored them on SQLite: UUIDs as 16 bytes, booleans as
/// integers, timestamps as the text `time` makes (each table's own: `rows/token.rs`,
/// `rows/audit_entry.rs`).
pub struct SqliteValues {
    /// The row's values, in the entity's order.
    pub values: Vec<rusqlite::types::Value>,
    time: fn(OffsetDateTime) -> Result<String, WriteError>,
}

impl SqliteValues {
    /// A sink whose times are bound as `time` makes them.
    pub fn new(time: fn(OffsetDateTime) -> Result<String, WriteError>) -> Self {
        Self {
            values: Vec::new(),
            time,
        }
    }

    /// For a table that stores no timestamps.
    pub fn untimed() -> Self {
        Self::new(|_| Err("this table stores no timestamps".into()))
    }
}

impl Sink<'_> for SqliteValues {
    fn put(&mut self, cell: Cell<'_>) -> Result<(), WriteError> {
        use rusqlite::types::Value;
        let value = match cell {
            Cell::Uuid(v) => v.map_or(Value::Null, |u| Value::Blob(u.as_bytes().to_vec())),
            Cell::Text(v) => v.map_or(Value::Null, |s| Value::Text(s.to_owned())),
            Cell::Bytes(v) => v.map_or(Value::Null, |b| Value::Blob(b.to_vec())),
            Cell::Int(v) => Value::Integer(v),
            Cell::Time(v) => v
                .map(self.time)
                .transpose()?
                .map_or(Value::Null, Value::Text),
            Cell::Bool(v) => v.map_or(Value::Null, |b| Value::Integer(i64::from(b))),
        };
        self.values.push(value);
        Ok(())
    }
}

/// Values as sqlx binds them on PostgreSQL, one parameter each.
#[derive(Default)]
pub struct PgValues(pub PgArguments);

fn add<'t, T: Encode<'t, Postgres> + Type<Postgres>>(
    args: &mut PgArguments,
    value: T,
) -> Result<(), WriteError> {
    args.add(value)
}

impl Sink<'_> for PgValues {
    fn put(&mut self, cell: Cell<'_>) -> Result<(), WriteError> {
        let args = &mut self.0;
        match cell {
            Cell::Uuid(v) => add(args, v),
            Cell::Text(v) => add(args, v),
            Cell::Bytes(v) => add(args, v),
            Cell::Int(v) => add(args, v),
            Cell::Time(v) => add(args, v),
            Cell::Bool(v) => add(args, v),
        }
    }
}

/// Many rows as one PostgreSQL array per column, for `INSERT … SELECT … FROM UNNEST($1::t[],
/// …)`; the arrays borrow the rows' text and bytes.
#[derive(Default)]
pub struct PgArrays<'a> {
    arrays: Vec<Array<'a>>,
    at: usize,
}

enum Array<'a> {
    Uuid(Vec<Option<Uuid>>),
    Text(Vec<Option<&'a str>>),
    Bytes(Vec<Option<&'a [u8]>>),
    Int(Vec<i64>),
    Time(Vec<Option<OffsetDateTime>>),
    Bool(Vec<Option<bool>>),
}

impl PgArrays<'_> {
    /// The arrays, one parameter each, in column order.
    pub fn into_arguments(self) -> Result<PgArguments, WriteError> {
        let mut args = PgArguments::default();
        for array in self.arrays {
            match array {
                Array::Uuid(v) => add(&mut args, v)?,
                Array::Text(v) => add(&mut args, v)?,
                Array::Bytes(v) => add(&mut args, v)?,
                Array::Int(v) => add(&mut args, v)?,
                Array::Time(v) => add(&mut args, v)?,
                Array::Bool(v) => add(&mut args, v)?,
            }
        }
        Ok(args)
    }
}

impl<'a> Sink<'a> for PgArrays<'a> {
    fn start_row(&mut self, _width: usize) -> Result<(), WriteError> {
        self.at = 0;
        Ok(())
    }

    fn put(&mut self, cell: Cell<'a>) -> Result<(), WriteError> {
        if self.at == self.arrays.len() {
            self.arrays.push(match cell {
                Cell::Uuid(_) => Array::Uuid(Vec::new()),
                Cell::Text(_) => Array::Text(Vec::new()),
                Cell::Bytes(_) => Array::Bytes(Vec::new()),
                Cell::Int(_) => Array::Int(Vec::new()),
                Cell::Time(_) => Array::Time(Vec::new()),
                Cell::Bool(_) => Array::Bool(Vec::new()),
            });
        }
        match (&mut self.arrays[self.at], cell) {
            (Array::Uuid(a), Cell::Uuid(v)) => a.push(v),
            (Array::Text(a), Cell::Text(v)) => a.push(v),
            (Array::Bytes(a), Cell::Bytes(v)) => a.push(v),
            (Array::Int(a), Cell::Int(v)) => a.push(v),
            (Array::Time(a), Cell::Time(v)) => a.push(v),
            (Array::Bool(a), Cell::Bool(v)) => a.push(v),
            _ => return Err("a column's values change type between rows".into()),
        }
        self.at += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entity::token;

    #[test]
    fn the_token_columns_are_cast_to_their_stored_types() {
        assert_eq!(
            pg_types::<token::Column>(&[]).join(","),
            "uuid,varchar,varchar,varchar,text,bytea,bytea,varchar,varchar,text,uuid,\
             timestamptz,uuid,timestamptz,timestamptz,bool,text,text,int8"
        );
    }

    #[test]
    fn a_column_whose_type_changes_between_rows_is_refused() {
        let mut arrays = PgArrays::default();
        arrays.start_row(1).unwrap();
        arrays.put(Cell::Int(1)).unwrap();
        arrays.start_row(1).unwrap();
        assert!(arrays.put(Cell::Text(Some("1"))).is_err());
    }
}
