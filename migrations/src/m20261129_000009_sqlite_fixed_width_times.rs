//! SQLite keeps timestamps as RFC 3339 text. Until now that text dropped trailing zeros of the
//! fraction (`…:05.12Z`), so text order, which every list order and expiry comparison on SQLite
//! uses, was not time order. The adapter now writes nine fraction digits: whole microseconds and
//! a final `1` (`…:05.120000001Z`); this rewrites the values stored before into that form.
//! PostgreSQL stores `timestamptz` and is unchanged.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DatabaseBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Every timestamp column the adapter orders or compares by, as (table, column).
const COLUMNS: &[(&str, &str)] = &[
    ("tenants", "created_at"),
    ("tenants", "modified_at"),
    ("applications", "created_at"),
    ("applications", "modified_at"),
    ("applications", "expires_at"),
    ("reactor_formulas", "created_at"),
    ("reactor_formulas", "modified_at"),
    ("reactors", "created_at"),
    ("reactors", "modified_at"),
    ("proxies", "created_at"),
    ("proxies", "modified_at"),
    ("idempotency_keys", "created_at"),
    ("sessions", "created_at"),
    ("sessions", "expires_at"),
    ("tokens", "created_at"),
    ("tokens", "modified_at"),
    ("tokens", "expires_at"),
];

/// The fixed-width form of column `c`: UTC values (`…Z`) keep their digits, padded or cut to
/// six and followed by `001`; a value with another offset goes through SQLite's own UTC
/// conversion, which keeps milliseconds. A value SQLite cannot read stays as it was (rather than
/// becoming NULL, which would turn an expiry into "never").
fn fixed_width(c: &str) -> String {
    format!(
        "COALESCE(CASE WHEN {c} LIKE '%Z' THEN substr({c}, 1, 19) || '.' || \
         substr(CASE WHEN substr({c}, 20, 1) = '.' THEN substr({c}, 21, length({c}) - 21) \
         ELSE '' END || '000000', 1, 6) || '001Z' \
         ELSE strftime('%Y-%m-%dT%H:%M:%f', {c}) || '000001Z' END, {c})"
    )
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        if db.get_database_backend() != DatabaseBackend::Sqlite {
            return Ok(());
        }
        for (table, column) in COLUMNS {
            let sql = format!(
                "UPDATE \"{table}\" SET \"{column}\" = {} WHERE \"{column}\" IS NOT NULL",
                fixed_width(&format!("\"{column}\""))
            );
            db.execute_unprepared(&sql).await?;
        }
        Ok(())
    }

    async fn down(&self, _manager: &SchemaManager) -> Result<(), DbErr> {
        // The fixed-width values are valid RFC 3339; the older code reads them as they are.
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests fail loudly by design

    use sea_orm_migration::sea_orm::{Database, Statement};

    use super::*;

    #[tokio::test]
    async fn old_values_become_fixed_width_utc() {
        let db = Database::connect("sqlite::memory:").await.unwrap();
        let cases = [
            ("2026-11-23T05:12:05Z", "2026-11-23T05:12:05.000000001Z"),
            ("2026-11-23T05:12:05.12Z", "2026-11-23T05:12:05.120000001Z"),
            (
                "2026-11-23T05:12:05.123456Z",
                "2026-11-23T05:12:05.123456001Z",
            ),
            (
                "2026-11-23T05:12:05.123456001Z",
                "2026-11-23T05:12:05.123456001Z",
            ),
            (
                "2026-11-23T07:12:05.5+02:00",
                "2026-11-23T05:12:05.500000001Z",
            ),
            ("not a time", "not a time"),
        ];
        for (old, want) in cases {
            let sql = format!(
                "SELECT {} AS y FROM (SELECT '{old}' AS x)",
                fixed_width("x")
            );
            let row = db
                .query_one_raw(Statement::from_string(DatabaseBackend::Sqlite, sql))
                .await
                .unwrap()
                .unwrap();
            let got: String = row.try_get("", "y").unwrap();
            assert_eq!(got, want, "{old}");
        }
    }
}
