//! Rows as the data of a PostgreSQL `COPY … FROM STDIN (FORMAT binary)`: a sink of the row
//! codecs (`write.rs`), used by the audit appender (`postgres/audit_copy.rs`).

use time::OffsetDateTime;

use super::write::{Cell, Sink, WriteError};

/// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01 UTC).
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// Rows as the data of a `COPY … FROM STDIN (FORMAT binary)`: [`CopyRows::finish`] adds the
/// trailer. Each value goes with its length, so no text from a caller is ever parsed as part
/// of a statement.
pub struct CopyRows(Vec<u8>);

impl CopyRows {
    /// The header; room for `capacity` bytes of rows.
    pub fn new(capacity: usize) -> Self {
        let mut out = Vec::with_capacity(32 + capacity);
        out.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
        out.extend_from_slice(&0_i32.to_be_bytes()); // flags
        out.extend_from_slice(&0_i32.to_be_bytes()); // header extension
        Self(out)
    }

    /// The data, with its trailer.
    pub fn finish(mut self) -> Vec<u8> {
        self.0.extend_from_slice(&(-1_i16).to_be_bytes());
        self.0
    }

    fn field(&mut self, value: Option<&[u8]>) -> Result<(), WriteError> {
        match value {
            None => self.0.extend_from_slice(&(-1_i32).to_be_bytes()),
            Some(bytes) => {
                let len = i32::try_from(bytes.len()).map_err(|_| "a field over 2 GiB")?;
                self.0.extend_from_slice(&len.to_be_bytes());
                self.0.extend_from_slice(bytes);
            }
        }
        Ok(())
    }
}

/// `t` as a binary `timestamptz`: whole microseconds since 2000-01-01 UTC (a fraction of a
/// microsecond dropped, as PostgreSQL rounds none in).
fn timestamptz(t: OffsetDateTime) -> i64 {
    let since_unix = t.unix_timestamp_nanos().div_euclid(1_000);
    i64::try_from(since_unix).unwrap_or(i64::MAX) - PG_EPOCH_MICROS
}

impl Sink<'_> for CopyRows {
    fn start_row(&mut self, width: usize) -> Result<(), WriteError> {
        let width = i16::try_from(width).map_err(|_| "a row over 32767 columns")?;
        self.0.extend_from_slice(&width.to_be_bytes());
        Ok(())
    }

    fn put(&mut self, cell: Cell<'_>) -> Result<(), WriteError> {
        match cell {
            Cell::Uuid(v) => self.field(v.as_ref().map(|u| &u.as_bytes()[..])),
            Cell::Text(v) => self.field(v.map(str::as_bytes)),
            Cell::Bytes(v) => self.field(v),
            Cell::Int(v) => self.field(Some(&v.to_be_bytes())),
            Cell::Time(v) => self.field(
                v.map(|t| timestamptz(t).to_be_bytes())
                    .as_ref()
                    .map(|b| &b[..]),
            ),
            Cell::Bool(v) => self.field(v.map(|b| [u8::from(b)]).as_ref().map(|b| &b[..])),
        }
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;
    use uuid::Uuid;

    use super::*;
    use crate::rows::write::put_row;

    #[test]
    fn timestamps_count_microseconds_from_postgres_epoch() {
        assert_eq!(timestamptz(datetime!(2000-01-01 00:00 UTC)), 0);
        assert_eq!(
            timestamptz(datetime!(2000-01-01 00:00:01.000_002_999 UTC)),
            1_000_002
        );
        assert_eq!(timestamptz(datetime!(2000-01-01 01:00 +01:00)), 0);
        assert_eq!(timestamptz(datetime!(1999-12-31 23:59:59 UTC)), -1_000_000);
        assert_eq!(
            timestamptz(datetime!(1999-12-31 23:59:59.999_999_5 UTC)),
            -1,
            "a fraction is dropped toward the past"
        );
    }

    #[test]
    fn a_copy_row_carries_its_width_and_each_value_with_its_length() {
        let mut rows = CopyRows::new(0);
        put_row::<crate::entity::activity::Column>(&mut rows, &[], |row| {
            row.uuid(crate::entity::activity::Column::TenantId, Uuid::nil());
            row.text(crate::entity::activity::Column::Month, "2026-11");
            row.text(crate::entity::activity::Column::TokenId, "t");
        })
        .unwrap();
        let data = rows.finish();
        let body = &data[19..];
        assert_eq!(&body[..2], &3_i16.to_be_bytes());
        assert_eq!(&body[2..6], &16_i32.to_be_bytes());
        assert_eq!(&body[22..26], &7_i32.to_be_bytes());
        assert_eq!(&body[26..33], b"2026-11");
        assert_eq!(&body[data.len() - 19 - 2..], &(-1_i16).to_be_bytes());
    }
}
