//! Opening a database: its pool and backend (`connect`: `tokenvault_persistence_sqlite::open`
//! or `tokenvault_persistence_postgres::open` by the URL), its migrations, and the statistics
//! kept after a bulk load.

use sea_orm::{ConnectionTrait, DatabaseBackend, DatabaseConnection, DbErr};
use tokenvault_migrations::{Migrator, MigratorTrait};
use tokenvault_persistence_shared::Database;
use tokenvault_persistence_shared::options::{ConnectError, DbOptions};

/// Opens a pool on `url` (`sqlite://path?mode=rwc` or `postgres://…`). SQLite gets WAL,
/// `synchronous=FULL` (unless `options` says `NORMAL`), foreign keys and a busy timeout; the
/// file is created when missing, readable by the owner only.
pub async fn connect(url: &str, options: DbOptions) -> Result<Database, ConnectError> {
    if url.starts_with("sqlite:") {
        tokenvault_persistence_sqlite::open::open(url, options).await
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        tokenvault_persistence_postgres::open::open(url, options).await
    } else {
        Err(ConnectError::UnsupportedUrl)
    }
}

/// The names of the migrations not applied yet.
pub async fn pending_migrations(db: &DatabaseConnection) -> Result<Vec<String>, ConnectError> {
    Migrator::get_pending_migrations(db)
        .await
        .map(|pending| pending.iter().map(|m| m.name().to_string()).collect())
        .map_err(|e| ConnectError::Migrate(e.to_string()))
}

/// Applies every pending migration, then distributes the schema where the database has Citus
/// (`tokenvault_migrations::citus`; nothing elsewhere).
pub async fn migrate(db: &DatabaseConnection) -> Result<(), ConnectError> {
    Migrator::up(db, None)
        .await
        .map_err(|e| ConnectError::Migrate(e.to_string()))?;
    let distributed = tokenvault_migrations::citus::distribute(db)
        .await
        .map_err(|e| {
            ConnectError::Migrate(format!("cannot distribute the schema on Citus: {e}"))
        })?;
    if let tokenvault_migrations::citus::Distribution::Converted(tables) = distributed {
        tracing::info!(tables = %tables.join(", "), "distributed the schema on Citus");
    }
    Ok(())
}

/// Fresh planner statistics on PostgreSQL (`ANALYZE`), as after a bulk load; its autovacuum does
/// the same later, or never where it is turned off. SQLite plans without statistics: nothing.
pub async fn refresh_statistics(db: &DatabaseConnection) -> Result<(), DbErr> {
    if db.get_database_backend() == DatabaseBackend::Postgres {
        db.execute_unprepared("ANALYZE").await?;
    }
    Ok(())
}

/// This schema's tables changed by more than autovacuum's threshold since their last analysis.
const CHANGED_TABLES: &str = "SELECT relname::text FROM pg_stat_user_tables \
     WHERE schemaname = current_schema() \
       AND n_mod_since_analyze > 50 + 0.1 * GREATEST(n_live_tup, 0) \
     ORDER BY relname";

/// On PostgreSQL, `ANALYZE`s each of this schema's tables changed by more than autovacuum's
/// default threshold (50 rows plus 10 %) since its last analysis, and returns their names; on
/// SQLite nothing.
///
/// Autovacuum does the same when it is on, but only after its nap (a minute), and not at all
/// where it is off. Without statistics the planner may look a child up through
/// `(tenant_id, created_at, id)` instead of the primary key: a children page was measured at
/// 21 requests/s with 13,000 tokens, 1,150 right after `ANALYZE` (docs/performance-journal.md).
///
/// On Citus the statistics that plan a tenant's statements are each worker's, of its shards:
/// every node is asked (`citus::CHANGED_TABLES`), and a distributed table with a changed
/// shard is analyzed from the coordinator, which analyzes each of its shards.
pub async fn analyze_changed_tables(database: &Database) -> Result<Vec<String>, DbErr> {
    let db = database.connection();
    if db.get_database_backend() != DatabaseBackend::Postgres {
        return Ok(Vec::new());
    }
    let query = if database.reads().distributed() {
        tokenvault_persistence_postgres::citus::CHANGED_TABLES
    } else {
        CHANGED_TABLES
    };
    let stale: Vec<String> = sea_orm::sqlx::query_scalar(sea_orm::sqlx::AssertSqlSafe(query))
        .fetch_all(db.get_postgres_connection_pool())
        .await
        .map_err(|e| DbErr::Custom(e.to_string()))?;
    for table in &stale {
        // A name PostgreSQL itself returned, quoted as an identifier.
        let quoted = format!("\"{}\"", table.replace('"', "\"\""));
        db.execute_unprepared(&format!("ANALYZE {quoted}")).await?;
    }
    Ok(stale)
}
