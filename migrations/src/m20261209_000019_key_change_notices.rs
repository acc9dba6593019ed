//! On PostgreSQL, a notice on channel `tokenvault_keys` whenever a row that a key's read
//! returns may have changed: any update, delete or truncate of `applications` (permissions,
//! rules, a regenerated or deleted key), `tenants` (settings, a tenant's delete), `reactors` or
//! `reactor_formulas` (a reactor's configuration, its formula's code). Each server keeps the
//! applications of the keys it has seen, and the reactors it has run, in memory
//! (`crates/persistence-postgres/src/key_cache.rs`) and forgets them all on a notice, whoever
//! made the change: another instance, a CLI command, an administrator's SQL. PostgreSQL sends
//! a notice when the transaction that made it commits, never for one rolled back.
//!
//! Row triggers (and one per statement for a truncate): a statement that changes no row — the
//! expiry sweep every instance runs, a purge's empty steps — sends nothing, where a statement
//! trigger would have emptied every instance's memory each time; PostgreSQL delivers the
//! identical notices of one transaction once. Inserts send none: a new row cannot be in any
//! memory yet. SQLite has one server per
//! file and no such memory: nothing to do there. On Citus the memory is not kept and nothing is
//! created (a distributed table may refuse the trigger); on a database that gains Citus later,
//! `citus.rs` drops these triggers before converting the tables.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DatabaseBackend, Statement};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The statements that create the function and its triggers.
const PG_UP: [&str; 9] = [
    "CREATE OR REPLACE FUNCTION tokenvault_keys_changed() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
  PERFORM pg_notify('tokenvault_keys', '');
  RETURN NULL;
END
$body$",
    "CREATE TRIGGER applications_keys_changed AFTER UPDATE OR DELETE ON applications \
     FOR EACH ROW EXECUTE FUNCTION tokenvault_keys_changed()",
    "CREATE TRIGGER applications_keys_truncated AFTER TRUNCATE ON applications \
     FOR EACH STATEMENT EXECUTE FUNCTION tokenvault_keys_changed()",
    "CREATE TRIGGER tenants_keys_changed AFTER UPDATE OR DELETE ON tenants \
     FOR EACH ROW EXECUTE FUNCTION tokenvault_keys_changed()",
    "CREATE TRIGGER tenants_keys_truncated AFTER TRUNCATE ON tenants \
     FOR EACH STATEMENT EXECUTE FUNCTION tokenvault_keys_changed()",
    "CREATE TRIGGER reactors_keys_changed AFTER UPDATE OR DELETE ON reactors \
     FOR EACH ROW EXECUTE FUNCTION tokenvault_keys_changed()",
    "CREATE TRIGGER reactors_keys_truncated AFTER TRUNCATE ON reactors \
     FOR EACH STATEMENT EXECUTE FUNCTION tokenvault_keys_changed()",
    "CREATE TRIGGER reactor_formulas_keys_changed AFTER UPDATE OR DELETE ON reactor_formulas \
     FOR EACH ROW EXECUTE FUNCTION tokenvault_keys_changed()",
    "CREATE TRIGGER reactor_formulas_keys_truncated AFTER TRUNCATE ON reactor_formulas \
     FOR EACH STATEMENT EXECUTE FUNCTION tokenvault_keys_changed()",
];

/// The tables whose changes are announced; `citus.rs` drops [`TRIGGERS_DROPPED`] before it
/// converts any of them.
pub(crate) const WATCHED: [&str; 4] = ["applications", "tenants", "reactors", "reactor_formulas"];

/// The statements that drop the triggers of [`PG_UP`], here at `down` and in `citus.rs`.
pub(crate) const TRIGGERS_DROPPED: [&str; 8] = [
    "DROP TRIGGER IF EXISTS applications_keys_changed ON applications",
    "DROP TRIGGER IF EXISTS applications_keys_truncated ON applications",
    "DROP TRIGGER IF EXISTS tenants_keys_changed ON tenants",
    "DROP TRIGGER IF EXISTS tenants_keys_truncated ON tenants",
    "DROP TRIGGER IF EXISTS reactors_keys_changed ON reactors",
    "DROP TRIGGER IF EXISTS reactors_keys_truncated ON reactors",
    "DROP TRIGGER IF EXISTS reactor_formulas_keys_changed ON reactor_formulas",
    "DROP TRIGGER IF EXISTS reactor_formulas_keys_truncated ON reactor_formulas",
];

/// Everything [`PG_UP`] made, undone: the triggers, then their function.
fn pg_down() -> impl Iterator<Item = &'static str> {
    TRIGGERS_DROPPED
        .into_iter()
        .chain(["DROP FUNCTION IF EXISTS tokenvault_keys_changed()"])
}

/// Whether the database has Citus: its tables may be distributed already (where a trigger is
/// refused), and no server keeps anything in memory there.
async fn on_citus(db: &impl ConnectionTrait) -> Result<bool, DbErr> {
    let found = db
        .query_one_raw(Statement::from_string(
            DatabaseBackend::Postgres,
            "SELECT 1 FROM pg_extension WHERE extname = 'citus'",
        ))
        .await?;
    Ok(found.is_some())
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        if db.get_database_backend() != DatabaseBackend::Postgres || on_citus(db).await? {
            return Ok(());
        }
        for sql in pg_down().chain(PG_UP) {
            db.execute_unprepared(sql).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        if db.get_database_backend() != DatabaseBackend::Postgres {
            return Ok(());
        }
        for sql in pg_down() {
            db.execute_unprepared(sql).await?;
        }
        Ok(())
    }
}
