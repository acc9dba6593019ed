//! PostgreSQL's activity rows (`usage.rs`, `token_activity`), written in chunks through
//! SeaORM's pool. A row already there is skipped, and so is a row of a tenant deleted
//! meanwhile, alone: the other tenants' rows of the same chunk are kept.

use std::sync::LazyLock;

use async_trait::async_trait;
use sea_orm::DatabaseConnection;
use sea_orm::sqlx;
use tokenvault_domain::RepoError;
use uuid::Uuid;

use tokenvault_persistence_shared::backend::ActivityWriter;
use tokenvault_persistence_shared::entity::activity;
use tokenvault_persistence_shared::rows::write::{PgArrays, WriteError, pg_params, put_row};
use tokenvault_persistence_shared::rows::{self, columns};

/// PostgreSQL: one statement of fixed text whatever the chunk's size (its plan is cached per
/// connection), one array per column (`rows/activity.rs`). Each row's tenant is locked
/// `FOR KEY SHARE` as the foreign key would lock it, so a tenant deleted before the insert
/// leaves its rows out instead of failing the whole chunk. `SKIP LOCKED`: only a delete locks
/// a tenant's row against it, and the chunk carries every tenant's rows, so a tenant being
/// deleted has its rows left out at once rather than holding the others' (a delete that
/// waited for this statement instead is fine too).
static ACTIVITY_UNNEST: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO token_activity ({cols}) SELECT u.* FROM UNNEST({arrays}) AS u({cols}) \
         WHERE EXISTS (SELECT 1 FROM tenants t WHERE t.id = u.tenant_id \
         FOR KEY SHARE SKIP LOCKED) ON CONFLICT DO NOTHING",
        cols = columns::<activity::Column>(None, &[]),
        arrays = pg_params::<activity::Column>(&[], "[]"),
    )
});

/// On Citus, [`ACTIVITY_UNNEST`] for one tenant's rows and without the lock on its row:
/// `tenants` is a reference table there, whose row lock is taken on every node (one node down
/// would fail every tenant's activity); the foreign key refuses a deleted tenant's rows.
static ACTIVITY_UNNEST_CITUS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO token_activity ({cols}) SELECT u.* FROM UNNEST({arrays}) AS u({cols}) \
         ON CONFLICT DO NOTHING",
        cols = columns::<activity::Column>(None, &[]),
        arrays = pg_params::<activity::Column>(&[], "[]"),
    )
});

fn encoding(e: WriteError) -> RepoError {
    RepoError::Backend(e)
}

/// Writes `entries` on PostgreSQL, through SeaORM's pool. On Citus (`distributed`) one
/// statement per tenant ([`ACTIVITY_UNNEST_CITUS`]): a tenant deleted meanwhile has its rows
/// dropped, and a tenant whose node cannot be reached fails the flush only after the other
/// tenants' rows are written.
pub(crate) async fn insert_postgres(
    db: &DatabaseConnection,
    entries: &[(Uuid, String, String)],
    distributed: bool,
) -> Result<(), RepoError> {
    let mut sorted: Vec<&(Uuid, String, String)> = entries.iter().collect();
    // Tenants and keys locked in one order by every flush (of this instance or another),
    // so two flushes of the same rows never wait on each other in opposite orders.
    sorted.sort_unstable();
    let pool = db.get_postgres_connection_pool();
    if !distributed {
        let arguments = arguments(&sorted)?;
        sqlx::query_with(sqlx::AssertSqlSafe(ACTIVITY_UNNEST.as_str()), arguments)
            .execute(pool)
            .await
            .map_err(repo_err)?;
        return Ok(());
    }
    let mut failed = None;
    for tenant in sorted.chunk_by(|a, b| a.0 == b.0) {
        match insert_tenant_citus(pool, tenant).await {
            Ok(()) | Err(RepoError::Gone(_)) => {}
            Err(e) => failed = failed.or(Some(e)),
        }
    }
    failed.map_or(Ok(()), Err)
}

/// One tenant's rows on Citus, in a transaction whose lock waits are bounded on the workers
/// too (`supervise::CITUS_LOCK_TIMEOUT`): a wait run out is the foreign key's lock on a
/// tenant being deleted (or an administrator's), and its rows are left out as
/// [`ACTIVITY_UNNEST`]'s `SKIP LOCKED` leaves them, instead of holding the flush until the
/// delete ends.
async fn insert_tenant_citus(
    pool: &sqlx::PgPool,
    rows: &[&(Uuid, String, String)],
) -> Result<(), RepoError> {
    let arguments = arguments(rows)?;
    let mut txn = pool.begin().await.map_err(repo_err)?;
    for set in crate::supervise::CITUS_LOCK_TIMEOUT {
        sqlx::raw_sql(set)
            .execute(&mut *txn)
            .await
            .map_err(repo_err)?;
    }
    let inserted = sqlx::query_with(
        sqlx::AssertSqlSafe(ACTIVITY_UNNEST_CITUS.as_str()),
        arguments,
    )
    .execute(&mut *txn)
    .await;
    match inserted {
        Ok(_) => txn.commit().await.map_err(repo_err),
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("55P03") => {
            tracing::debug!("activity rows of a tenant whose row is locked left out");
            Ok(())
        }
        Err(e) => Err(repo_err(e)),
    }
}

/// `rows` as one array per column.
fn arguments(rows: &[&(Uuid, String, String)]) -> Result<sqlx::postgres::PgArguments, RepoError> {
    let mut arrays = PgArrays::default();
    for entry in rows {
        put_row(&mut arrays, &[], |row| rows::activity::put(entry, row)).map_err(encoding)?;
    }
    arrays.into_arguments().map_err(encoding)
}

fn repo_err(e: sqlx::Error) -> RepoError {
    tokenvault_persistence_shared::repo_error::repo_err(sea_orm::DbErr::Exec(
        sea_orm::RuntimeErr::SqlxError(std::sync::Arc::new(e)),
    ))
}

/// A PostgreSQL database's activity writes.
#[derive(Debug)]
pub(crate) struct PgActivity {
    db: DatabaseConnection,
    /// A Citus database: rows are written tenant by tenant.
    distributed: bool,
}

impl PgActivity {
    /// The activity writes of `db`, Citus when `distributed`.
    pub(crate) fn new(db: DatabaseConnection, distributed: bool) -> Self {
        Self { db, distributed }
    }
}

#[async_trait]
impl ActivityWriter for PgActivity {
    async fn insert(&self, entries: &[(Uuid, String, String)]) -> Result<(), RepoError> {
        insert_postgres(&self.db, entries, self.distributed).await
    }
}
