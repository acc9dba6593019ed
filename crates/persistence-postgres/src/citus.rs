//! What the adapter does differently on a Citus database (`PgBackend`, `postgres/backend.rs`), beside the
//! joined reads it leaves out (`PgBackend`'s `distributed`) and the token writer's statement
//! per tenant (`postgres/group.rs`).

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

/// The tables with a shard (or, on the coordinator, a table of its own) changed by more than
/// autovacuum's threshold since its last analysis (`connect.rs`'s `CHANGED_TABLES`), asked of
/// every node: a shard is named by its table and shard id (`tokens_102040`), which
/// `pg_dist_shard` turns back into its table. A name that is neither a known shard nor a table
/// of this schema (a shard left behind by a move, not yet cleaned up) is left out. The schema
/// is passed in, as the nodes' own command runs with `pg_catalog` first on the coordinator.
pub const CHANGED_TABLES: &str = "\
    WITH changed AS ( \
      SELECT unnest(string_to_array(n.result, ' ')) AS name \
      FROM run_command_on_all_nodes(format( \
        $$SELECT coalesce(string_agg(relname, ' '), '') FROM pg_stat_user_tables \
          WHERE schemaname = %L \
            AND n_mod_since_analyze > 50 + 0.1 * GREATEST(n_live_tup, 0)$$, \
        current_schema())) n \
      WHERE n.success) \
    SELECT DISTINCT t.relname::text FROM changed c \
    JOIN pg_class t ON t.oid = coalesce( \
      (SELECT s.logicalrelid FROM pg_dist_shard s \
       WHERE s.shardid::text = substring(c.name FROM '_([0-9]+)$')), \
      to_regclass(quote_ident(current_schema()) || '.' || quote_ident(c.name))) \
    WHERE t.relnamespace = current_schema()::regnamespace \
    ORDER BY 1";
