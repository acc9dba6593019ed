//! PostgreSQL's statements on connections of the adapter's own, beside SeaORM's pool: the
//! repositories' point reads (`reads.rs`), among them the key's application (every request),
//! and the key-and-token read of `GET /tokens/{id}`. Single token inserts go
//! to the group writer (`postgres/group.rs`) and audit appends to the appender (`postgres/audit_copy.rs`),
//! both threads started here, one each per database; `connect` fails when they cannot start.
//!
//! Why: sqlx 0.9 pings a connection every time it goes back to its pool, so each pooled
//! statement cost two round trips to the server (the statement, then a `Sync` on release):
//! an strace of one tokenize showed the ping after both of its statements. Here a connection
//! goes back to the idle list as it is once its statement finished, and is dropped (never
//! reused) when the statement did not finish: an error other than the database's own answer,
//! or a caller that left half-way, may have left it in the middle of the protocol.
//!
//! Statements are built by SeaORM as before and bound by the same binder (`sea-query-sqlx`);
//! sqlx caches each connection's prepared statements by their text. A read that fails on a
//! reused connection for any reason but the database's answer is tried once more on a new
//! one (the server may have closed idle connections).

use std::sync::{Arc, Mutex, PoisonError};

use sea_orm::sqlx::postgres::{PgConnectOptions, PgConnection, PgPool};
use sea_orm::sqlx::{self, Connection};
use sea_orm::{DbErr, QueryResult, RuntimeErr, Statement};
use sea_query_sqlx::SqlxValues;
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::audit_copy::AuditWriter;
use crate::group::PgWriter;
use crate::supervise::answered;

/// How long a statement waits for a connection, as SeaORM's pool does (`connect`).
const ACQUIRE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Connections of one database, at most as many as SeaORM's pool may hold (so a server opens
/// up to twice `TOKENVAULT_DB_MAX_CONNECTIONS`, plus the group writer's one and the audit
/// appender's one, `postgres/audit_copy.rs`).
pub(crate) struct PgDirect {
    options: PgConnectOptions,
    idle: Mutex<Vec<PgConnection>>,
    permits: Semaphore,
    /// Single token inserts, committed in groups (`postgres/group.rs`).
    writer: PgWriter,
    /// Audit appends (`postgres/audit_copy.rs`).
    audit: AuditWriter,
}

impl std::fmt::Debug for PgDirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgDirect").finish_non_exhaustive()
    }
}

/// A connection taken from the idle list (or opened) for one statement.
struct Lease<'a> {
    conn: Option<PgConnection>,
    home: &'a PgDirect,
    /// Taken from the idle list, not opened for this statement.
    reused: bool,
    /// Whether the statement finished, so the connection may serve another.
    finished: bool,
    _permit: SemaphorePermit<'a>,
}

impl Lease<'_> {
    fn conn(&mut self) -> &mut PgConnection {
        // Present from `lease` until drop.
        self.conn
            .as_mut()
            .unwrap_or_else(|| unreachable!("a lease holds its connection"))
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take()
            && self.finished
            && !self.home.permits.is_closed()
        {
            self.home
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(conn);
        }
    }
}

fn bound(stmt: &Statement) -> sqlx::query::Query<'_, sqlx::Postgres, SqlxValues> {
    let values = stmt.values.clone().unwrap_or(sea_orm::Values(Vec::new()));
    sqlx::query_with(sqlx::AssertSqlSafe(stmt.sql.as_str()), SqlxValues(values))
}

fn query_err(e: sqlx::Error) -> DbErr {
    DbErr::Query(RuntimeErr::SqlxError(Arc::new(e)))
}

impl PgDirect {
    /// The direct connections, token writer and audit appender of the PostgreSQL database
    /// behind `pool`; its two threads start here. `citus`: the database is distributed, and
    /// the token writer writes one statement per tenant (`postgres/group.rs`).
    ///
    /// # Errors
    /// A thread could not start.
    pub(crate) fn open(pool: &PgPool, citus: bool) -> std::io::Result<Arc<Self>> {
        let options = generic_plans((*pool.connect_options()).clone(), citus);
        let max = usize::try_from(pool.options().get_max_connections()).unwrap_or(1);
        Ok(Arc::new(Self {
            writer: PgWriter::start(options.clone(), citus)?,
            audit: AuditWriter::start(options.clone(), citus)?,
            options,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(max.max(1)),
        }))
    }

    /// The group writer of this database (`postgres/group.rs`).
    pub(crate) fn writer(&self) -> &PgWriter {
        &self.writer
    }

    /// The audit appender of this database (`postgres/audit_copy.rs`).
    pub(crate) fn audit(&self) -> &AuditWriter {
        &self.audit
    }

    /// Stops the group writer and the audit appender once what was queued is written, and
    /// closes the idle connections.
    pub(crate) async fn stop(&self, until: tokio::time::Instant) {
        // No statement gets a connection after this (`PoolClosed`).
        self.permits.close();
        self.writer.stop(until).await;
        self.audit.stop(until).await;
        self.forget_idle();
    }

    /// Drops every idle connection (after one failed outside the database's answer).
    fn forget_idle(&self) {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// A connection within `ACQUIRE_TIMEOUT` (the pool's own limit), or `PoolTimedOut`.
    async fn lease(&self) -> Result<Lease<'_>, sqlx::Error> {
        tokio::time::timeout(ACQUIRE_TIMEOUT, self.lease_unbounded())
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)?
    }

    async fn lease_unbounded(&self) -> Result<Lease<'_>, sqlx::Error> {
        let permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| sqlx::Error::PoolClosed)?;
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let (conn, reused) = match idle {
            Some(conn) => (conn, true),
            None => (PgConnection::connect_with(&self.options).await?, false),
        };
        Ok(Lease {
            conn: Some(conn),
            home: self,
            reused,
            finished: false,
            _permit: permit,
        })
    }

    /// The first row of `stmt`, a read.
    pub(crate) async fn query_one(&self, stmt: &Statement) -> Result<Option<QueryResult>, DbErr> {
        Ok(self.fetch(stmt, false).await?.pop())
    }

    /// Every row of `stmt`, a read.
    pub(crate) async fn query_all(&self, stmt: &Statement) -> Result<Vec<QueryResult>, DbErr> {
        self.fetch(stmt, true).await
    }

    /// The rows of the read `stmt`: all of them, or the first (at most one row back).
    async fn fetch(&self, stmt: &Statement, all: bool) -> Result<Vec<QueryResult>, DbErr> {
        self.fetch_query(|| bound(stmt), all).await
    }

    /// The rows of the read that `query` makes (again for the one retry): all of them, or the
    /// first. For statements bound by hand (arrays: `postgres/key_group.rs`).
    pub(crate) async fn fetch_query<'q, A>(
        &self,
        query: impl Fn() -> sqlx::query::Query<'q, sqlx::Postgres, A>,
        all: bool,
    ) -> Result<Vec<QueryResult>, DbErr>
    where
        A: sqlx::IntoArguments<sqlx::Postgres> + 'q,
    {
        let mut retried = false;
        loop {
            let mut lease = self.lease().await.map_err(query_err)?;
            let rows = if all {
                query().fetch_all(lease.conn()).await
            } else {
                query()
                    .fetch_optional(lease.conn())
                    .await
                    .map(|row| row.into_iter().collect())
            };
            match rows {
                Ok(rows) => {
                    lease.finished = true;
                    return Ok(rows.into_iter().map(QueryResult::from).collect());
                }
                Err(e) if answered(&e) => {
                    lease.finished = true;
                    return Err(query_err(e));
                }
                Err(e) if lease.reused && !retried => {
                    // The others waited as long: likely closed by the same restart.
                    tracing::debug!(error = %e, "an idle PostgreSQL connection failed; trying a new one");
                    self.forget_idle();
                    retried = true;
                }
                Err(e) => return Err(query_err(e)),
            }
        }
    }
}

#[async_trait::async_trait]
impl tokenvault_persistence_shared::reads::DirectQueries for PgDirect {
    async fn query_one(&self, stmt: &Statement) -> Result<Option<QueryResult>, DbErr> {
        PgDirect::query_one(self, stmt).await
    }

    async fn query_all(&self, stmt: &Statement) -> Result<Vec<QueryResult>, DbErr> {
        PgDirect::query_all(self, stmt).await
    }
}

/// The options of every connection of the adapter's own (`PgDirect`'s, the writer's, the
/// appender's): generic plans from the first execution on, except on Citus.
fn generic_plans(options: PgConnectOptions, citus: bool) -> PgConnectOptions {
    // Generic plans from the first execution on. Every statement here finds its rows
    // through an index whatever its values, but PostgreSQL plans a prepared statement
    // anew for each execution while a plan made for the values looks cheaper than the
    // generic one: a search by a blind index term (the `@>` of one value estimated at a
    // row, the generic at 1 % of the table) was planned on every call at a million tokens,
    // 1.7 ms of planning for 0.2 ms of reading, and ran at half its rate at a thousand
    // tokens (docs/performance-journal.md, "Token search"). The writer's group insert
    // (`UNNEST` of its arrays, a sublink per row) was planned on each group too: ~7 % of
    // its backend's CPU under the tokenize load (median +8.7 % without it).
    // Not on Citus: a generic plan leaves the tenant's value unknown when Citus plans,
    // and it cannot route a statement with a subquery then (a search's count failed:
    // "could not create distributed plan").
    if citus {
        options
    } else {
        options.options([("plan_cache_mode", "force_generic_plan")])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_adapters_own_connections_plan_generically_but_on_citus() {
        let base = PgConnectOptions::new();
        let generic = generic_plans(base.clone(), false);
        assert!(
            generic
                .get_options()
                .is_some_and(|o| o.contains("plan_cache_mode=force_generic_plan")),
            "{:?}",
            generic.get_options()
        );
        assert_eq!(generic_plans(base, true).get_options(), None);
    }
}
