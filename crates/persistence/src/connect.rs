//! Opening a database: its pool and engine (`connect`), its migrations, and the statistics
//! kept after a bulk load. The crate's root only names its modules and what it exports.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sea_orm::sqlx::postgres::PgPoolOptions;
use sea_orm::sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};
use sea_orm::{
    ConnectionTrait, DatabaseBackend, DatabaseConnection, DbErr, SqlxPostgresConnector,
    SqlxSqliteConnector,
};
use tokenvault_migrations::{Migrator, MigratorTrait};

use crate::engine::Database;
use crate::postgres::backend::PgBackend;
use crate::postgres::direct as pg_direct;
use crate::sqlite::backend::SqliteBackend;
use crate::sqlite::{direct, writer};

/// Why the database could not be opened or migrated.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The URL names neither `sqlite:` nor `postgres:`.
    #[error("database URL must start with sqlite: or postgres:")]
    UnsupportedUrl,
    /// The driver failed to connect.
    #[error("cannot connect to the database: {0}")]
    Connect(String),
    /// A migration failed.
    #[error("cannot migrate the database: {0}")]
    Migrate(String),
}

/// How a pool is opened.
#[derive(Clone, Copy, Debug)]
pub struct DbOptions {
    /// Pool size.
    pub max_connections: u32,
    /// SQLite only: `synchronous=NORMAL` instead of `FULL` (faster; an acknowledged commit can
    /// be lost on power loss).
    pub sqlite_synchronous_normal: bool,
}

impl DbOptions {
    /// `max_connections` connections, durable SQLite (`synchronous=FULL`).
    pub fn new(max_connections: u32) -> Self {
        Self {
            max_connections,
            sqlite_synchronous_normal: false,
        }
    }
}

/// Creates the SQLite file (owner-only, 0600) when missing and narrows an existing file and its
/// `-wal`/`-shm` companions to 0600. SQLite gives the companions the database file's mode.
fn restrict_sqlite_files(path: &std::path::Path) -> Result<(), ConnectError> {
    let io = |e: std::io::Error| ConnectError::Connect(format!("{}: {e}", path.display()));
    if path.as_os_str().is_empty() || path.to_str() == Some(":memory:") {
        return Ok(());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
        if !path.exists() {
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(path)
                .map_err(io)?;
        }
        for suffix in ["", "-wal", "-shm"] {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            let file = std::path::PathBuf::from(name);
            if let Ok(meta) = std::fs::metadata(&file)
                && meta.permissions().mode() & 0o077 != 0
            {
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))
                    .map_err(io)?;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = io;
    Ok(())
}

/// Opens a pool on `url` (`sqlite://path?mode=rwc` or `postgres://…`). SQLite gets WAL,
/// `synchronous=FULL` (unless `options` says `NORMAL`), foreign keys and a busy timeout; the
/// file is created when missing, readable by the owner only.
pub async fn connect(url: &str, options: DbOptions) -> Result<Database, ConnectError> {
    let max_connections = options.max_connections;
    let synchronous_normal = options.sqlite_synchronous_normal;
    if url.starts_with("sqlite:") {
        let synchronous = if synchronous_normal {
            SqliteSynchronous::Normal
        } else {
            SqliteSynchronous::Full
        };
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| ConnectError::Connect(e.to_string()))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(synchronous)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        restrict_sqlite_files(options.get_filename())?;
        // No ping before each acquire: it costs a worker round trip per query, and a broken
        // connection surfaces as an error on the query itself anyway.
        let pool = SqlitePoolOptions::new()
            .max_connections(max_connections)
            .test_before_acquire(false)
            .connect_with(options)
            .await
            .map_err(|e| ConnectError::Connect(e.to_string()))?;
        // The file SQLite actually opened: what the direct reads and the writer open beside
        // the pool. An in-memory database has none, and each pooled connection would see a
        // database of its own: refused.
        let opened: Option<String> = sea_orm::sqlx::query_scalar(
            "SELECT file FROM pragma_database_list WHERE name = 'main'",
        )
        .fetch_optional(&pool)
        .await
        .map_err(|e| ConnectError::Connect(e.to_string()))?;
        let path = opened.filter(|f| !f.is_empty()).ok_or_else(|| {
            ConnectError::Connect("SQLite needs a database file, not an in-memory database".into())
        })?;
        let file = writer::OnDisk {
            path: path.into(),
            synchronous_normal,
        };
        let direct = direct::DirectReads::open_file(&file)
            .map_err(|e| ConnectError::Connect(format!("cannot start the SQLite writer: {e}")))?;
        Ok(Database::new(
            SqlxSqliteConnector::from_sqlx_sqlite_pool(pool),
            Arc::new(SqliteBackend::new(direct)),
        ))
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .test_before_acquire(false)
            .acquire_timeout(Duration::from_secs(10))
            .connect(url)
            .await
            .map_err(|e| ConnectError::Connect(e.to_string()))?;
        // A database with the citus extension is distributed by `migrate`
        // (`tokenvault_migrations::citus`), or refused there.
        let citus: bool = sea_orm::sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')",
        )
        .fetch_one(&pool)
        .await
        .map_err(|e| ConnectError::Connect(e.to_string()))?;
        let pg = pg_direct::PgDirect::open(&pool, citus).map_err(|e| {
            ConnectError::Connect(format!("cannot start the PostgreSQL writer threads: {e}"))
        })?;
        Ok(Database::new(
            SqlxPostgresConnector::from_sqlx_postgres_pool(pool),
            Arc::new(PgBackend::new(pg, citus)),
        ))
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
        crate::postgres::citus::CHANGED_TABLES
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
