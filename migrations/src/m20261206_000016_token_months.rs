//! Tokens created per tenant and UTC month, kept by the database, so that creating a token
//! writes no `token_activity` row.
//!
//! The monthly active count (docs/decisions.md §10) is the distinct tokens created, read or used
//! in the month. Every created token used to be one more `token_activity` row, whose primary
//! key `(tenant_id, month, token_id)` puts each at a random place: under a tokenize load
//! three quarters of the pages SQLite wrote to its log were that index's (docs/performance-journal.md,
//! "Monthly activity without a row per new token"). Now each token inserted adds one to
//! `token_months`, and the domain records activity only for tokens created in an earlier
//! month: the count is the sum of the month's counters plus its activity rows, and no token
//! is in both. Nothing decrements a counter, so a deleted token keeps its count.
//!
//! The counters start empty: a token created this month before this migration was recorded
//! as activity when it was made, and is counted by that row. On PostgreSQL a trigger per
//! statement counts, reading the statement's rows from a transition table, so a group insert
//! updates one row; each writing backend adds to a row of its own (`pg_backend_pid() & 15`),
//! so two instances' token writers do not queue on one counter row until the other commits.
//! SQLite has only row triggers, and one counter `UPSERT` per token cost ~8 % of the tokenize
//! rate: there the persistence adapter adds each group's counts in the group's transaction
//! (`crates/persistence/src/token_months.rs`), one row per month (shard 0).
//!
//! No foreign key to `tenants`, as for `token_counts`: a deleted tenant's rows are removed by
//! its purge (`tenant_purge.rs`).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum TokenMonths {
    Table,
    TenantId,
    Month,
    Shard,
    Created,
}

const PG_UP: &str = "
CREATE FUNCTION tokens_month_added() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
  INSERT INTO token_months AS m (tenant_id, month, shard, created)
  SELECT tenant_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM'),
         (pg_backend_pid() & 15)::smallint, COUNT(*)
  FROM added GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (tenant_id, month, shard) DO UPDATE SET created = m.created + EXCLUDED.created;
  RETURN NULL;
END
$body$;
CREATE TRIGGER tokens_month_created AFTER INSERT ON tokens
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION tokens_month_added();
";

const PG_DOWN: &str = "DROP TRIGGER IF EXISTS tokens_month_created ON tokens;
DROP FUNCTION IF EXISTS tokens_month_added();";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        // Down first: SQLite runs migrations outside a transaction, and a run stopped half-way
        // must not block the next.
        self.down(manager).await?;
        manager
            .create_table(
                Table::create()
                    .table(TokenMonths::Table)
                    .col(ColumnDef::new(TokenMonths::TenantId).uuid().not_null())
                    .col(ColumnDef::new(TokenMonths::Month).string_len(7).not_null())
                    .col(
                        ColumnDef::new(TokenMonths::Shard)
                            .small_integer()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(TokenMonths::Created)
                            .big_integer()
                            .not_null(),
                    )
                    .primary_key(
                        Index::create()
                            .col(TokenMonths::TenantId)
                            .col(TokenMonths::Month)
                            .col(TokenMonths::Shard),
                    )
                    .to_owned(),
            )
            .await?;
        if db.get_database_backend() == DatabaseBackend::Postgres {
            db.execute_unprepared(PG_UP).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        if db.get_database_backend() == DatabaseBackend::Postgres {
            db.execute_unprepared(PG_DOWN).await?;
        }
        manager
            .drop_table(
                Table::drop()
                    .table(TokenMonths::Table)
                    .if_exists()
                    .to_owned(),
            )
            .await
    }
}
