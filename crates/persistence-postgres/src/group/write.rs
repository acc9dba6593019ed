//! How the group writer (`group.rs`) writes a group: all rows in one statement, then each row
//! a unique index or a tenant being deleted left out alone, to learn its own answer; on Citus
//! one statement per tenant.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use sea_orm::sqlx;
use sea_orm::sqlx::postgres::PgConnection;
use sea_orm::{DbErr, RuntimeErr};
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::TokenWrite;
use tokenvault_persistence_shared::rows::token::{
    NOT_INSERTED, insert_order, put_new, write_conflict,
};
use tokenvault_persistence_shared::rows::write::{PgArrays, PgValues, put_row};
use uuid::Uuid;

use super::{Pending, Sql, TENANT_LIVE, answer_all, backend, citus};
use crate::supervise::{answered, within};

/// Whether `e` is PostgreSQL's `lock_not_available` (`55P03`): the connection's
/// `lock_timeout` ran out.
fn lock_not_available(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => db.code().as_deref() == Some("55P03"),
        _ => false,
    }
}

/// Writes `group` one statement per tenant, each its own transaction: on Citus a statement
/// with one tenant's rows runs on that tenant's node alone, where one with many tenants' rows
/// is pulled to the coordinator and copied out to every shard it touches (one shard group per
/// statement, docs/decisions.md §13). `Err` when the connection failed (every caller has had
/// its answer).
pub(super) async fn write_per_tenant(
    conn: &mut PgConnection,
    group: Vec<Pending>,
) -> Result<(), sqlx::Error> {
    let mut by_tenant: BTreeMap<Uuid, Vec<Pending>> = BTreeMap::new();
    for p in group {
        by_tenant.entry(p.row.tenant_id).or_default().push(p);
    }
    let mut tenants = by_tenant.into_values();
    while let Some(rows) = tenants.next() {
        if let Err(e) = write_group(conn, rows, Sql::of(true)).await {
            for rest in tenants {
                answer_all(rest, &e);
            }
            return Err(e);
        }
    }
    Ok(())
}

/// Writes `group`; `Err` when the connection failed (every caller has had its answer).
pub(super) async fn write_group(
    conn: &mut PgConnection,
    group: Vec<Pending>,
    sql: Sql,
) -> Result<(), sqlx::Error> {
    // A second row with an id already in the group waits for its own statement after it:
    // `RETURNING` names a stored row by (tenant, id), which must then stand for one caller.
    let mut ids = HashSet::new();
    let (group, twins): (Vec<Pending>, Vec<Pending>) = group
        .into_iter()
        .partition(|p| ids.insert((p.row.tenant_id, p.row.id.clone())));
    if let Err(e) = write_unique(conn, group, sql).await {
        answer_all(twins, &e);
        return Err(e);
    }
    write_each(conn, twins, sql).await
}

/// Writes `group`, whose (tenant, id) pairs are distinct.
async fn write_unique(
    conn: &mut PgConnection,
    mut group: Vec<Pending>,
    sql: Sql,
) -> Result<(), sqlx::Error> {
    if group.len() <= 1 {
        return write_each(conn, group, sql).await;
    }
    // As `/tokenize` batches are: `ON CONFLICT DO NOTHING` still waits for another
    // transaction's uncommitted entry while holding the ones it made.
    group.sort_unstable_by(|a, b| insert_order(&a.row, &b.row));
    let mut arrays = PgArrays::default();
    let encoded = group
        .iter()
        .try_for_each(|p| {
            put_row(&mut arrays, NOT_INSERTED, |row| {
                put_new(&p.row, &p.lists, row);
            })
        })
        .and_then(|()| arrays.into_arguments());
    let arguments = match encoded {
        Ok(arguments) => arguments,
        Err(e) => {
            answer_all(group, &sqlx::Error::Encode(e));
            return Ok(());
        }
    };
    // Each statement within the deadline: past it, its rows may or may not have been committed,
    // as when a connection breaks, and their callers are answered with the error.
    let statement =
        sqlx::query_as_with::<_, (Uuid, String), _>(sqlx::AssertSqlSafe(sql.group), arguments);
    let result = run_statement(conn, sql, async |c| statement.fetch_all(c).await).await;
    match result {
        Ok(stored) => {
            let stored: HashSet<(Uuid, String)> = stored.into_iter().collect();
            let mut left_out = Vec::new();
            for p in group {
                if stored.contains(&(p.row.tenant_id, p.row.id.clone())) {
                    let _ = p.reply.send(Ok(TokenWrite::Done));
                } else {
                    left_out.push(p);
                }
            }
            write_each(conn, left_out, sql).await
        }
        // A lock waited out (a table's, as a schema change takes it, or another
        // transaction's uncommitted rows): every row would wait as long again alone, with
        // every tenant's inserts queued behind; the group fails at once instead.
        Err(e) if lock_not_available(&e) && sql.citus => citus::locked_out(conn, group, &e).await,
        Err(e) if lock_not_available(&e) => {
            answer_all(group, &e);
            Ok(())
        }
        // Refused as a whole (a foreign key): each row alone gets its own answer.
        Err(e) if answered(&e) => write_each(conn, group, sql).await,
        Err(e) => {
            answer_all(group, &e);
            Err(e)
        }
    }
}

/// Runs one of `sql`'s statements within the deadline: on Citus in a transaction of its own
/// whose lock waits are bounded on the workers too ([`citus::begin`], [`citus::end`]).
async fn run_statement<T>(
    conn: &mut PgConnection,
    sql: Sql,
    statement: impl AsyncFnOnce(&mut PgConnection) -> Result<T, sqlx::Error>,
) -> Result<T, sqlx::Error> {
    let result = match citus::begin(conn, sql.citus).await {
        Ok(()) => within(statement(&mut *conn)).await,
        Err(e) => Err(e),
    };
    citus::end(conn, sql.citus, result).await
}

async fn write_each(
    conn: &mut PgConnection,
    group: Vec<Pending>,
    sql: Sql,
) -> Result<(), sqlx::Error> {
    let mut group = group.into_iter();
    while let Some(p) = group.next() {
        if let Err(e) = write_alone(conn, p, sql).await {
            answer_all(group.collect(), &e);
            return Err(e);
        }
    }
    Ok(())
}

/// One row in its own statement, answered with the index it hits.
async fn write_alone(conn: &mut PgConnection, p: Pending, sql: Sql) -> Result<(), sqlx::Error> {
    let t = &p.row;
    let mut values = PgValues::default();
    if let Err(e) = put_row(&mut values, NOT_INSERTED, |row| {
        put_new(t, &p.lists, row);
    }) {
        let _ = p.reply.send(Err(backend(&sqlx::Error::Encode(e))));
        return Ok(());
    }
    let statement = sqlx::query_with(sqlx::AssertSqlSafe(sql.single), values.0);
    let result = run_statement(conn, sql, async |c| statement.execute(c).await).await;
    match result {
        Ok(done) if done.rows_affected() > 0 => {
            let _ = p.reply.send(Ok(TokenWrite::Done));
            Ok(())
        }
        // Left out by `TENANT_FREE`: the tenant is gone, or its row is locked. Only the last
        // step of a tombstone's purge locks it so; a live tenant's row locked otherwise (an
        // administrator's open transaction) is an error its client may retry, never a 401.
        Ok(_) => {
            let live = within(
                sqlx::query_scalar::<_, bool>(TENANT_LIVE)
                    .bind(t.tenant_id)
                    .fetch_one(&mut *conn),
            )
            .await;
            match live {
                Ok(false) => {
                    let _ = p.reply.send(Ok(TokenWrite::Missing));
                    Ok(())
                }
                Ok(true) => {
                    let locked = "token insert: the tenant's row is locked by another transaction";
                    let _ = p.reply.send(Err(RepoError::Backend(locked.into())));
                    Ok(())
                }
                Err(e) => {
                    let _ = p.reply.send(Err(backend(&e)));
                    if answered(&e) { Ok(()) } else { Err(e) }
                }
            }
        }
        Err(e) if lock_not_available(&e) && sql.citus => citus::locked_out(conn, vec![p], &e).await,
        Err(e) if answered(&e) => {
            // The same translation as every other token write (`tokens.rs`).
            let answer = write_conflict(DbErr::Exec(RuntimeErr::SqlxError(Arc::new(e))));
            let _ = p.reply.send(answer);
            Ok(())
        }
        Err(e) => {
            let _ = p.reply.send(Err(backend(&e)));
            Err(e)
        }
    }
}
