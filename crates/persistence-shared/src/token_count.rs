//! A token list's `total_items` from the counts the database keeps (`token_counts`, migration
//! 12): one row per tenant, container, type (and, on PostgreSQL, shard), minus the tokens that
//! have expired but are not yet removed. Reads a handful of rows where a `COUNT(*)` walks every
//! token of the tenant.
//!
//! Used when the total depends on nothing but container and type: no id, metadata or parent
//! filter, and a visibility that each container answers on its own (no session conditions).
//! Any other list counts in SQL as before.

use sea_orm::{ConnectionTrait, DatabaseBackend, DatabaseConnection, Statement, Value};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::TokenFilter;
use uuid::Uuid;

use crate::repo_error::repo_err;
use crate::stamp::stamp;

/// Live tokens per container and type: the kept counts less the expired rows still stored, in
/// one statement, so both halves read one snapshot (the expiry job deleting between them would
/// otherwise be counted twice).
fn statement(backend: DatabaseBackend, tenant_id: Uuid, now: OffsetDateTime) -> Statement {
    let (a, b, c) = match backend {
        DatabaseBackend::Postgres => ("$1", "$2", "$3"),
        _ => ("?", "?", "?"),
    };
    let sql = format!(
        "SELECT container, token_type, CAST(SUM(n) AS BIGINT) AS n FROM ( \
           SELECT container, token_type, live AS n FROM token_counts WHERE tenant_id = {a} \
           UNION ALL \
           SELECT container, token_type, -COUNT(*) AS n FROM tokens \
           WHERE tenant_id = {b} AND expires_at IS NOT NULL AND expires_at <= {c} \
           GROUP BY container, token_type \
         ) AS counted GROUP BY container, token_type"
    );
    let values: [Value; 3] = [tenant_id.into(), tenant_id.into(), stamp(now).into()];
    Statement::from_sql_and_values(backend, sql, values)
}

/// The number of live tokens `filter` admits in `tenant_id` at `now`, from the kept counts;
/// `None` when the filter needs more than container and type to decide (count in SQL then).
/// Public for the contract tests (`test-support`), which check it is taken and exact.
pub async fn counted_total(
    db: &DatabaseConnection,
    tenant_id: Uuid,
    filter: &TokenFilter,
    now: OffsetDateTime,
) -> Result<Option<u64>, RepoError> {
    if !filter.ids.is_empty()
        || !filter.metadata.is_empty()
        || filter.parent.is_some()
        || !filter.visibility.decided_by_container()
    {
        return Ok(None);
    }
    let rows = db
        .query_all_raw(statement(db.get_database_backend(), tenant_id, now))
        .await
        .map_err(repo_err)?;
    let mut total: i64 = 0;
    for row in rows {
        let container: String = row.try_get("", "container").map_err(repo_err)?;
        let token_type: String = row.try_get("", "token_type").map_err(repo_err)?;
        let n: i64 = row.try_get("", "n").map_err(repo_err)?;
        let Some(visible) = filter.visibility.admits_container(&container) else {
            return Ok(None);
        };
        if visible && (filter.types.is_empty() || filter.types.contains(&token_type)) {
            total = total.saturating_add(n);
        }
    }
    // Never negative while the triggers keep the counts; a count is no place to fail a list.
    Ok(Some(u64::try_from(total).unwrap_or(0)))
}

/// Drops the counter rows that count nothing (a container emptied, or on PostgreSQL a shard
/// whose inserts and deletes cancel out): a sum without them is the same, and a tenant that
/// cycles through containers leaves no row behind for each. Returns how many were dropped.
///
/// One tenant's (`Some`), or every tenant's (`None`, the expiry sweep): the sweep spans tenants
/// on purpose, reading which tenants have such rows in one statement over every shard (on
/// Citus a multi-shard read, without locks), then dropping them tenant by tenant, each a
/// statement on that tenant's shard.
///
/// On PostgreSQL the rows are locked in key order, as the count triggers lock theirs, and a row
/// a writer holds is left for the next time: a plain `DELETE … WHERE live = 0` locked them in
/// the order it found them, and could deadlock with an insert that held one and waited for
/// another.
pub async fn drop_empty(db: &impl ConnectionTrait, tenant: Option<Uuid>) -> Result<u64, RepoError> {
    let backend = db.get_database_backend();
    let tenants = match tenant {
        Some(id) => vec![id],
        None => empty_row_tenants(db).await?,
    };
    let sql = match backend {
        DatabaseBackend::Postgres => DROP_EMPTY_POSTGRES,
        _ => "DELETE FROM token_counts WHERE tenant_id = ?1 AND live = 0",
    };
    let mut dropped = 0;
    for id in tenants {
        let result = db
            .execute_raw(Statement::from_sql_and_values(backend, sql, [id.into()]))
            .await
            .map_err(repo_err)?;
        dropped += result.rows_affected();
    }
    Ok(dropped)
}

/// The tenants with counter rows that count nothing: one read over every tenant (on Citus,
/// over every shard: its caller allows that, `citus::fanning_out`).
pub async fn empty_row_tenants(db: &impl ConnectionTrait) -> Result<Vec<Uuid>, RepoError> {
    db.query_all_raw(Statement::from_string(
        db.get_database_backend(),
        "SELECT DISTINCT tenant_id FROM token_counts WHERE live = 0",
    ))
    .await
    .map_err(repo_err)?
    .iter()
    .map(|row| row.try_get_by_index::<Uuid>(0))
    .collect::<Result<_, _>>()
    .map_err(repo_err)
}

const DROP_EMPTY_POSTGRES: &str = "DELETE FROM token_counts c USING ( \
     SELECT tenant_id, container, token_type, shard FROM token_counts \
     WHERE tenant_id = $1 AND live = 0 \
     ORDER BY tenant_id, container, token_type, shard FOR UPDATE SKIP LOCKED) e \
     WHERE c.tenant_id = $1 AND c.tenant_id = e.tenant_id AND c.container = e.container \
     AND c.token_type = e.token_type AND c.shard = e.shard AND c.live = 0";
