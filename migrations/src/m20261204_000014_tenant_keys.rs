//! Every primary key of a tenant-owned table starts with `tenant_id`, so that a distributed
//! PostgreSQL (Citus) can shard every such table by `tenant_id` (docs/persistence.md). Two keys
//! did not: `audit_log (id)` and `idempotency_keys (application_id, key)`. The tables that hold
//! the hashes looked up before the tenant is known (applications, sessions, proxies) stay
//! global: they are the reference tables docs/persistence.md names.
//!
//! PostgreSQL only, and online: the new unique index is built `CONCURRENTLY` (writes go on), then
//! swapped in as the primary key in one short `ALTER` (no scan, at most 5 s of waiting for its
//! lock). Instances of the version before this one fail requests with an `Idempotency-Key`
//! once it has run (their `ON CONFLICT` names the old key): replace them, do not mix them. Hence no transaction around the
//! migration; every step can be run again after an interruption. SQLite is never distributed:
//! nothing changes there. Forward-only, as every migration here.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DatabaseBackend, Statement};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// (table, its primary key's new columns, the index built for it, the columns before).
const KEYS: [(&str, &str, &str, &str); 2] = [
    ("audit_log", "tenant_id, id", "audit_log_tenant_pkey", "id"),
    (
        "idempotency_keys",
        "tenant_id, application_id, key",
        "idempotency_keys_tenant_pkey",
        "application_id, key",
    ),
];

/// Whether `table`'s primary key already holds `tenant_id`.
const KEY_HAS_TENANT: &str = "SELECT EXISTS (SELECT 1 FROM pg_index x \
     JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = ANY(x.indkey) \
     WHERE x.indrelid = to_regclass($1) AND x.indisprimary AND a.attname = 'tenant_id')";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        if db.get_database_backend() != DatabaseBackend::Postgres {
            return Ok(());
        }
        for (table, columns, index, _) in KEYS {
            let done = db
                .query_one_raw(Statement::from_sql_and_values(
                    DatabaseBackend::Postgres,
                    KEY_HAS_TENANT,
                    [table.into()],
                ))
                .await?
                .map(|row| row.try_get_by_index::<bool>(0))
                .transpose()?
                .unwrap_or(false);
            if done {
                continue;
            }
            // An interrupted concurrent build leaves an invalid index behind: built again.
            db.execute_unprepared(&format!("DROP INDEX CONCURRENTLY IF EXISTS {index}"))
                .await?;
            db.execute_unprepared(&format!(
                "CREATE UNIQUE INDEX CONCURRENTLY {index} ON {table} ({columns})"
            ))
            .await?;
            // The swap takes the table's exclusive lock for an instant, but waiting for it
            // would hold every write behind it: it gives up after 5 s instead (the migration
            // fails, and runs again from here at the next start).
            let swap = manager.begin().await?;
            let conn = swap.get_connection();
            conn.execute_unprepared("SET LOCAL lock_timeout = '5s'")
                .await?;
            conn.execute_unprepared(&format!(
                "ALTER TABLE {table} DROP CONSTRAINT {table}_pkey, \
                 ADD CONSTRAINT {table}_pkey PRIMARY KEY USING INDEX {index}"
            ))
            .await?;
            swap.commit().await?;
        }
        Ok(())
    }

    /// The keys as they were (a test goes down and up again; nothing runs this in service).
    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        if db.get_database_backend() != DatabaseBackend::Postgres {
            return Ok(());
        }
        for (table, _, _, before) in KEYS {
            db.execute_unprepared(&format!(
                "ALTER TABLE {table} DROP CONSTRAINT {table}_pkey, \
                 ADD CONSTRAINT {table}_pkey PRIMARY KEY ({before})"
            ))
            .await?;
        }
        Ok(())
    }

    fn use_transaction(&self) -> Option<bool> {
        Some(false)
    }
}
