//! Where a repository's reads outside a transaction run: on PostgreSQL, the adapter's own
//! connections (`pg_direct.rs`), which go back to their idle list without the `Sync` round trip
//! sqlx 0.9 sends every time a pooled connection is released; elsewhere SeaORM's pool.
//!
//! [`Reads`] is a SeaORM connection, so a query reads `.one(&self.reads)` as it read
//! `.one(&self.db)`. Only reads go to the direct connections: whatever executes (a write)
//! goes to the pool, as do transactions, which are begun on the pool and never on this.
//! Each direct statement sees what was committed before it started (read committed), so a
//! read after a write the caller was told about sees that write, as on the pool.

use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DbBackend, DbErr, ExecResult, QueryResult, Statement,
};

use crate::pg_direct::PgDirect;

/// Reads of one database: PostgreSQL's direct connections, else the pool.
#[derive(Clone, Debug)]
pub(crate) struct Reads {
    db: DatabaseConnection,
    pg: Option<Arc<PgDirect>>,
}

impl Reads {
    /// The reads of `db`.
    pub(crate) fn of(db: &DatabaseConnection) -> Self {
        Self {
            db: db.clone(),
            pg: PgDirect::for_connection(db),
        }
    }

    /// PostgreSQL's direct connections; `None` on SQLite.
    pub(crate) fn pg(&self) -> Option<&Arc<PgDirect>> {
        self.pg.as_ref()
    }
}

#[async_trait]
impl ConnectionTrait for Reads {
    fn get_database_backend(&self) -> DbBackend {
        self.db.get_database_backend()
    }

    async fn execute_raw(&self, stmt: Statement) -> Result<ExecResult, DbErr> {
        self.db.execute_raw(stmt).await
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        self.db.execute_unprepared(sql).await
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        match &self.pg {
            Some(pg) => pg.query_one(&stmt).await,
            None => self.db.query_one_raw(stmt).await,
        }
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        match &self.pg {
            Some(pg) => pg.query_all(&stmt).await,
            None => self.db.query_all_raw(stmt).await,
        }
    }
}
