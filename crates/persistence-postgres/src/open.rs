//! Opening a PostgreSQL database: SeaORM's pool on it, its own connections and threads, its
//! backend (Citus when the extension is there).

use std::sync::Arc;
use std::time::Duration;

use sea_orm::SqlxPostgresConnector;
use sea_orm::sqlx::postgres::PgPoolOptions;
use tokenvault_persistence_shared::Database;
use tokenvault_persistence_shared::options::{ConnectError, DbOptions};

use crate::backend::PgBackend;
use crate::direct as pg_direct;
use crate::key_listener::KeyMemory;

/// Opens a pool on `url` (`postgres://…`).
pub async fn open(url: &str, options: DbOptions) -> Result<Database, ConnectError> {
    let max_connections = options.max_connections;
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
    let started = |e: std::io::Error| {
        ConnectError::Connect(format!("cannot start the PostgreSQL writer threads: {e}"))
    };
    let pg = pg_direct::PgDirect::open(&pool, citus).map_err(started)?;
    // Keys in memory where asked for, but on Citus (`key_cache.rs`).
    let keys = (!citus && options.keys_in_memory)
        .then(|| KeyMemory::start((*pool.connect_options()).clone()))
        .transpose()
        .map_err(started)?;
    Ok(Database::new(
        SqlxPostgresConnector::from_sqlx_postgres_pool(pool),
        Arc::new(PgBackend::new(pg, keys, citus)),
    ))
}
