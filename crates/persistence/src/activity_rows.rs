//! Monthly activity rows (`token_activity`: tenant, month, token id), written in chunks by the
//! activity flush. A row already there is skipped, and so is a row of a tenant deleted
//! meanwhile, alone: the other tenants' rows of the same chunk are kept.

use sea_orm::DatabaseConnection;
use sea_orm::sqlx;
use tokenvault_domain::RepoError;
use uuid::Uuid;

/// PostgreSQL: one statement of fixed text whatever the chunk's size (its plan is cached per
/// connection). Each row's tenant is locked `FOR KEY SHARE` as the foreign key would lock it,
/// so a tenant deleted before the insert leaves its rows out instead of failing the whole
/// chunk. `SKIP LOCKED`: only a delete locks a tenant's row against it, and the chunk carries
/// every tenant's rows, so a tenant being deleted has its rows left out at once rather than
/// holding the others' (a delete that waited for this statement instead is fine too).
const ACTIVITY_UNNEST: &str = "INSERT INTO token_activity (tenant_id, month, token_id) \
     SELECT u.tenant_id, u.month, u.token_id \
     FROM UNNEST($1::uuid[], $2::varchar[], $3::varchar[]) AS u(tenant_id, month, token_id) \
     WHERE EXISTS (SELECT 1 FROM tenants t WHERE t.id = u.tenant_id FOR KEY SHARE SKIP LOCKED) \
     ON CONFLICT DO NOTHING";

/// Writes `entries` on the SQLite writer's connection: one transaction, a cached statement per
/// row.
pub(crate) fn insert_on_writer(
    conn: &rusqlite::Connection,
    entries: &[(Uuid, String, String)],
) -> Result<(), RepoError> {
    const ACTIVITY: &str = "INSERT INTO token_activity (tenant_id, month, token_id) \
         VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING";
    crate::sqlite_tx::transaction(conn, |conn| {
        let mut insert = conn.prepare_cached(ACTIVITY)?;
        for (tenant_id, month, token_id) in entries {
            match insert.execute(rusqlite::params![
                &tenant_id.as_bytes()[..],
                month,
                token_id
            ]) {
                Err(rusqlite::Error::SqliteFailure(f, _))
                    if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY => {}
                other => {
                    other?;
                }
            }
        }
        Ok(())
    })
    .map_err(crate::sqlite_tx::backend)
}

/// Writes `entries` on PostgreSQL, through SeaORM's pool.
pub(crate) async fn insert_postgres(
    db: &DatabaseConnection,
    entries: &[(Uuid, String, String)],
) -> Result<(), RepoError> {
    let mut sorted: Vec<&(Uuid, String, String)> = entries.iter().collect();
    // Tenants and keys locked in one order by every flush (of this instance or another),
    // so two flushes of the same rows never wait on each other in opposite orders.
    sorted.sort_unstable();
    sqlx::query(ACTIVITY_UNNEST)
        .bind(sorted.iter().map(|e| e.0).collect::<Vec<_>>())
        .bind(sorted.iter().map(|e| e.1.clone()).collect::<Vec<_>>())
        .bind(sorted.iter().map(|e| e.2.clone()).collect::<Vec<_>>())
        .execute(db.get_postgres_connection_pool())
        .await
        .map_err(|e| RepoError::Backend(Box::new(e)))?;
    Ok(())
}
