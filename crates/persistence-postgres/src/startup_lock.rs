//! One instance at a time through migrations and bootstrap: instances started together on an
//! empty PostgreSQL database would otherwise both run a migration (one fails on a column the
//! other added) or both bootstrap. A session-level advisory lock on a connection of its own,
//! released when the guard's connection closes (dropped, or the process dies). SQLite: one file
//! of one process at a time anyway; no lock.

use sea_orm::sqlx::postgres::PgConnection;
use sea_orm::sqlx::{self, ConnectOptions as _, Connection as _};
use sea_orm::{DatabaseBackend, DatabaseConnection};

use tokenvault_persistence_shared::options::ConnectError;

/// The advisory lock's key: "tokenvault startup" as a constant, so that every version agrees.
const KEY: i64 = 0x746f_6b65_6e76_0001;

/// Held while this instance migrates and bootstraps; released on drop.
#[derive(Debug)]
pub struct StartupLock(Option<PgConnection>);

impl StartupLock {
    /// Waits for the lock (PostgreSQL), or takes nothing (SQLite).
    ///
    /// # Errors
    /// No connection to the database.
    pub async fn acquire(db: &DatabaseConnection) -> Result<Self, ConnectError> {
        if db.get_database_backend() != DatabaseBackend::Postgres {
            return Ok(Self(None));
        }
        let options = db.get_postgres_connection_pool().connect_options();
        let mut conn = options
            .connect()
            .await
            .map_err(|e| ConnectError::Migrate(format!("startup lock: {e}")))?;
        // Polled rather than waited on, so that a lock held elsewhere (another instance's
        // migration, or any session of the database taking this key) is told in the log.
        let started = std::time::Instant::now();
        let mut told = std::time::Duration::ZERO;
        loop {
            let (taken,): (bool,) = sqlx::query_as("SELECT pg_try_advisory_lock($1)")
                .bind(KEY)
                .fetch_one(&mut conn)
                .await
                .map_err(|e| ConnectError::Migrate(format!("startup lock: {e}")))?;
            if taken {
                return Ok(Self(Some(conn)));
            }
            let waited = started.elapsed();
            if waited >= told + std::time::Duration::from_secs(10) {
                told = waited;
                tracing::warn!(
                    waited_secs = waited.as_secs(),
                    key = KEY,
                    "waiting for the startup lock (another instance is migrating or \
                     bootstrapping, or a session holds pg_advisory_lock of this key)"
                );
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    /// Releases the lock now (dropping the guard also does, by closing its connection).
    pub async fn release(mut self) {
        if let Some(conn) = self.0.take() {
            let _ = conn.close().await;
        }
    }
}
