//! What the adapter does differently on a Citus database (`Database::distributed`), beside the
//! joined reads it leaves out (`reads.rs`, `Reads::pg_joined`) and the token writer's statement
//! per tenant (`pg_group.rs`).

use sea_orm::{ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr, TransactionTrait};

/// Allows, for the rest of its transaction, statements over many shards: a job that spans
/// tenants on purpose (the expiry sweep) says so with it. Connections may refuse them
/// otherwise (`citus.multi_task_query_log_level = 'error'`, as the tests run on Citus:
/// `testing/citus.rs`), so that no request path fans out to every node unnoticed.
const FAN_OUT: &str = "SET LOCAL citus.multi_task_query_log_level = 'off'";

/// A transaction whose statements may span shards ([`FAN_OUT`]) on Citus (`distributed`), a
/// plain one elsewhere: for the jobs that span tenants on purpose, which say so where they
/// call it.
pub(crate) async fn fanning_out(
    db: &DatabaseConnection,
    distributed: bool,
) -> Result<DatabaseTransaction, DbErr> {
    let txn = db.begin().await?;
    if distributed {
        txn.execute_unprepared(FAN_OUT).await?;
    }
    Ok(txn)
}
