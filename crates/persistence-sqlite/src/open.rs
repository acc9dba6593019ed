//! Opening a SQLite file: SeaORM's pool on it, its direct reads and threads, its backend.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sea_orm::SqlxSqliteConnector;
use sea_orm::sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};
use tokenvault_persistence_shared::Database;
use tokenvault_persistence_shared::options::{ConnectError, DbOptions};

use crate::backend::SqliteBackend;
use crate::{direct, writer};

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

/// Opens the SQLite file of `url` (`sqlite://path?mode=rwc`): WAL, `synchronous=FULL`
/// (unless `options` says `NORMAL`), foreign keys and a busy timeout; the file is created when
/// missing, readable by the owner only.
pub async fn open(url: &str, options: DbOptions) -> Result<Database, ConnectError> {
    let max_connections = options.max_connections;
    let synchronous_normal = options.sqlite_synchronous_normal;
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
    let opened: Option<String> =
        sea_orm::sqlx::query_scalar("SELECT file FROM pragma_database_list WHERE name = 'main'")
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
}
