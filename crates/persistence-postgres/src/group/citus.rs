//! The group writer on Citus (`PgBackend`, `postgres/backend.rs`): its statements, and the transaction
//! each runs in so that its lock waits are bounded on the workers as on the coordinator.

use std::sync::LazyLock;

use sea_orm::sqlx;
use sea_orm::sqlx::postgres::PgConnection;
use tokenvault_domain::ports::TokenWrite;

use super::{Pending, TENANT_LIVE, answer_all, columns};
use crate::supervise::{self, answered, within};
use tokenvault_persistence_shared::entity::token;
use tokenvault_persistence_shared::rows::token::NOT_INSERTED;
use tokenvault_persistence_shared::rows::write::pg_params;

/// On Citus, [`super::GROUP_SQL`] without [`super::TENANT_FREE`]: `tenants` is a reference table there, and
/// a lock on its row is taken on every node, so one node down would fail every tenant's
/// inserts (measured: `tests/citus.rs`). The foreign key, checked on the tenant's node against
/// its copy of `tenants`, refuses a deleted tenant's rows instead (each row then alone).
pub(super) static GROUP_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO tokens ({cols}) SELECT u.* FROM UNNEST({arrays}) AS u({cols}) \
         ON CONFLICT DO NOTHING RETURNING tenant_id, id",
        cols = columns(),
        arrays = pg_params::<token::Column>(NOT_INSERTED, "[]"),
    )
});

/// On Citus, one row alone as a plain `INSERT … VALUES`, which Citus sends to the tenant's
/// node as it is (no lock on `tenants`, as [`GROUP_SQL`]).
pub(super) static SINGLE_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO tokens ({cols}) VALUES ({values})",
        cols = columns(),
        values = pg_params::<token::Column>(NOT_INSERTED, ""),
    )
});

/// On Citus, begins the transaction of one of the writer's statements
/// (`supervise::begin_on_citus`); elsewhere each statement is its own transaction already.
pub(super) async fn begin(conn: &mut PgConnection, citus: bool) -> Result<(), sqlx::Error> {
    if citus {
        within(supervise::begin_on_citus(conn)).await
    } else {
        Ok(())
    }
}

/// On Citus, ends the transaction [`begin`] opened: committed after a statement that went
/// through, rolled back after one the database refused. A connection that failed is left as
/// it is (the caller drops it). A failed `COMMIT` fails as a connection does, whatever the
/// database answered: Citus may have committed on the worker before it reports the error, so
/// the rows are neither written again nor reported refused, and the connection is replaced.
pub(super) async fn end<T>(
    conn: &mut PgConnection,
    citus: bool,
    result: Result<T, sqlx::Error>,
) -> Result<T, sqlx::Error> {
    if !citus {
        return result;
    }
    match &result {
        Ok(_) => match within(sqlx::raw_sql("COMMIT").execute(&mut *conn)).await {
            Ok(_) => result,
            Err(e) => Err(sqlx::Error::Protocol(format!(
                "token insert: the commit's outcome is unknown: {e}"
            ))),
        },
        Err(e) if answered(e) => {
            within(sqlx::raw_sql("ROLLBACK").execute(&mut *conn)).await?;
            result
        }
        Err(_) => result,
    }
}

/// `group`'s rows waited out the lock timeout on a worker: the foreign key's lock on their
/// tenant's row, which only the last step of a tombstone's purge holds against it. The group
/// is one tenant's (the writer writes one statement per tenant on Citus). A tenant gone or a
/// tombstone answers [`TokenWrite::Missing`], as `TENANT_FREE` does on PostgreSQL (after the
/// wait, not at once: there is no lock to skip on Citus); a live tenant's row locked
/// otherwise is the lock error, never a 401.
pub(super) async fn locked_out(
    conn: &mut PgConnection,
    group: Vec<Pending>,
    e: &sqlx::Error,
) -> Result<(), sqlx::Error> {
    let Some(tenant_id) = group.first().map(|p| p.row.tenant_id) else {
        return Ok(());
    };
    debug_assert!(group.iter().all(|p| p.row.tenant_id == tenant_id));
    let asked = within(
        sqlx::query_scalar::<_, bool>(TENANT_LIVE)
            .bind(tenant_id)
            .fetch_one(&mut *conn),
    )
    .await;
    match asked {
        Ok(true) => answer_all(group, e),
        Ok(false) => {
            for p in group {
                let _ = p.reply.send(Ok(TokenWrite::Missing));
            }
        }
        Err(asking) => {
            answer_all(group, &asking);
            if !answered(&asking) {
                return Err(asking);
            }
        }
    }
    Ok(())
}
