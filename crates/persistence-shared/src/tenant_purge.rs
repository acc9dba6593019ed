//! Deleting a tenant in two steps, so that no other tenant waits on it.
//!
//! 1. [`retire`]: one short transaction makes the tenant a tombstone (`deleted_at`), drops its
//!    wrapped data key (its ciphertexts can no longer be opened) and deletes the rows that hold
//!    its keys (applications, sessions, proxies): every key of it stops working at once.
//! 2. [`purge_batch`], called by a background job until it returns 0: deletes at most `batch`
//!    rows of one tombstone's tables per call, each call its own short statement, and the
//!    tombstone itself once nothing of it is left.
//!
//! Before, one `DELETE FROM tenants` cascaded through everything in one transaction: it held
//! the tenant's row lock until the cascade committed (seconds for a large tenant), and the
//! shared token writer, audit appender and activity flush, which take `KEY SHARE` on a row's
//! tenant through its foreign key, waited behind it for other tenants' rows too. The tombstone
//! update takes `FOR NO KEY UPDATE`, which does not conflict with `KEY SHARE`.

use sea_orm::sea_query::{Alias, Expr, ExprTrait, Query};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseBackend, DatabaseConnection, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect, Statement, TransactionTrait,
};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use uuid::Uuid;

use crate::entity::tenant;
use crate::repo_error::repo_err;
use crate::stamp::stamp;

/// The tenant-owned tables, in the order their rows are purged: the tables holding its keys
/// first (a key inserted by a request that raced the delete works nowhere, as every key lookup
/// leaves deleted tenants out, and it goes before anything else), children before parents,
/// the token counts after the tokens (whose deletes update them), and their monthly creations.
const PURGE_ORDER: [&str; 13] = [
    "sessions",
    "applications",
    "proxies",
    "token_associations",
    "token_activity",
    "tokens",
    "token_counts",
    "token_months",
    "idempotency_keys",
    "audit_log",
    "audit_heads",
    "reactors",
    "reactor_formulas",
];

/// Each table's primary key, by which a PostgreSQL batch is deleted (entries in
/// [`PURGE_ORDER`]'s order). Not `ctid`: Citus refuses a modification that finds its rows by
/// `ctid`, and by the key the batch is one statement on the tenant's shard there.
const PURGE_KEYS: [&str; 13] = [
    "id",
    "id",
    "tenant_id, id",
    "tenant_id, parent_id, child_id",
    "tenant_id, month, token_id",
    "tenant_id, id",
    "tenant_id, container, token_type, shard",
    "tenant_id, month, shard",
    "tenant_id, application_id, key",
    "tenant_id, id",
    "tenant_id",
    "tenant_id, id",
    "tenant_id, id",
];

/// The tables whose rows hold the tenant's keys, deleted with the tombstone's making: the
/// first of [`PURGE_ORDER`].
const KEY_TABLES: usize = 3;

/// Makes tenant `id` a tombstone deleted `at`; `false` when there is no such live tenant.
pub(crate) async fn retire(
    db: &DatabaseConnection,
    id: Uuid,
    at: OffsetDateTime,
) -> Result<bool, RepoError> {
    let txn = db.begin().await.map_err(repo_err)?;
    let marked = tenant::Entity::update_many()
        .col_expr(tenant::Column::DeletedAt, Expr::value(Some(stamp(at))))
        .col_expr(
            tenant::Column::DataKey,
            Expr::value(Option::<Vec<u8>>::None),
        )
        .filter(tenant::Column::Id.eq(id))
        .filter(tenant::Column::DeletedAt.is_null())
        .exec(&txn)
        .await
        .map_err(repo_err)?;
    if marked.rows_affected == 0 {
        txn.rollback().await.map_err(repo_err)?;
        return Ok(false);
    }
    for &table in &PURGE_ORDER[..KEY_TABLES] {
        let delete = Query::delete()
            .from_table(Alias::new(table))
            .and_where(Expr::col(Alias::new("tenant_id")).eq(id))
            .to_owned();
        txn.execute(&delete).await.map_err(repo_err)?;
    }
    txn.commit().await.map_err(repo_err)?;
    Ok(true)
}

/// Deletes at most `batch` rows of the oldest tombstone's tables, or the tombstone itself when
/// none is left; how many rows went (0: no tombstone left, or none it could take this round).
pub(crate) async fn purge_batch(db: &DatabaseConnection, batch: u64) -> Result<u64, RepoError> {
    let oldest: Option<Uuid> = tenant::Entity::find()
        .filter(tenant::Column::DeletedAt.is_not_null())
        .select_only()
        .column(tenant::Column::Id)
        .order_by_asc(tenant::Column::DeletedAt)
        .limit(1)
        .into_tuple()
        .one(db)
        .await
        .map_err(repo_err)?;
    let Some(id) = oldest else {
        return Ok(0);
    };
    let taken = take_some(db, id, batch).await?;
    if taken > 0 {
        return Ok(taken);
    }
    // Nothing of it left: the tombstone, unless a row was written since (by a request already
    // past its key) or is held by another instance's purge: then it waits for the next round,
    // and no delete ever cascades through more than a batch.
    if delete_tombstone(db, id).await? {
        return Ok(1);
    }
    // Refused: rows written meanwhile are taken now; rows held elsewhere wait for a later call.
    take_some(db, id, batch).await
}

/// Deletes tombstone `id` if none of its tables holds a row. In one transaction that locks the
/// tombstone first (an insert for it that arrives meanwhile waits, then its foreign key refuses
/// it), asks each table on its own, by the tenant (on Citus a statement on one shard each; a
/// delete of a reference table with subqueries over distributed tables is refused there), and
/// deletes it. `false`: not a tombstone any more, or a table still holds a row.
///
/// SQLite has one writer and no Citus: one statement there, with the emptiness as its
/// condition (a transaction that reads before it writes could not wait for the writer).
async fn delete_tombstone(db: &DatabaseConnection, id: Uuid) -> Result<bool, RepoError> {
    let backend = db.get_database_backend();
    if backend != DatabaseBackend::Postgres {
        let empty: Vec<String> = PURGE_ORDER
            .iter()
            .map(|table| format!("NOT EXISTS (SELECT 1 FROM {table} WHERE tenant_id = tenants.id)"))
            .collect();
        let gone = tenant::Entity::delete_many()
            .filter(tenant::Column::Id.eq(id))
            .filter(tenant::Column::DeletedAt.is_not_null())
            .filter(Expr::cust(empty.join(" AND ")))
            .exec(db)
            .await
            .map_err(repo_err)?;
        return Ok(gone.rows_affected > 0);
    }
    let txn = db.begin().await.map_err(repo_err)?;
    let locked: Option<Uuid> = tenant::Entity::find()
        .filter(tenant::Column::Id.eq(id))
        .filter(tenant::Column::DeletedAt.is_not_null())
        .select_only()
        .column(tenant::Column::Id)
        .lock_exclusive()
        .into_tuple()
        .one(&txn)
        .await
        .map_err(repo_err)?;
    if locked.is_none() {
        txn.rollback().await.map_err(repo_err)?;
        return Ok(false);
    }
    for table in PURGE_ORDER {
        let left = txn
            .query_one_raw(Statement::from_sql_and_values(
                backend,
                format!("SELECT 1 FROM {table} WHERE tenant_id = $1 LIMIT 1"),
                [id.into()],
            ))
            .await
            .map_err(repo_err)?;
        if left.is_some() {
            txn.rollback().await.map_err(repo_err)?;
            return Ok(false);
        }
    }
    tenant::Entity::delete_many()
        .filter(tenant::Column::Id.eq(id))
        .exec(&txn)
        .await
        .map_err(repo_err)?;
    txn.commit().await.map_err(repo_err)?;
    Ok(true)
}

/// Deletes at most `batch` rows of the first of the tenant's tables in [`PURGE_ORDER`] that
/// has any it can take; how many (0: none).
async fn take_some(db: &DatabaseConnection, id: Uuid, batch: u64) -> Result<u64, RepoError> {
    for (table, key) in PURGE_ORDER.into_iter().zip(PURGE_KEYS) {
        let taken = delete_some(db, (table, key), id, batch).await?;
        if taken > 0 {
            return Ok(taken);
        }
    }
    Ok(0)
}

/// Deletes at most `batch` of the tenant's rows of `table` (a name of [`PURGE_ORDER`], with
/// its primary key).
async fn delete_some(
    db: &DatabaseConnection,
    (table, key): (&str, &str),
    tenant_id: Uuid,
    batch: u64,
) -> Result<u64, RepoError> {
    let backend = db.get_database_backend();
    let limit = i64::try_from(batch).unwrap_or(i64::MAX);
    let sql = match backend {
        // Rows another instance's purge holds are skipped, not waited for.
        DatabaseBackend::Postgres => format!(
            "DELETE FROM {table} WHERE tenant_id = $1 AND ({key}) IN (\
             SELECT {key} FROM {table} WHERE tenant_id = $1 LIMIT $2 FOR UPDATE SKIP LOCKED)"
        ),
        _ => format!(
            "DELETE FROM {table} WHERE rowid IN (\
             SELECT rowid FROM {table} WHERE tenant_id = ?1 LIMIT ?2)"
        ),
    };
    let result = db
        .execute_raw(Statement::from_sql_and_values(
            backend,
            sql,
            [tenant_id.into(), limit.into()],
        ))
        .await
        .map_err(repo_err)?;
    Ok(result.rows_affected())
}
