//! Distributing the schema on Citus (docs/decisions.md §13), run after the migrations by
//! `tokenvault migrate` and at every server start; on a database without the `citus` extension
//! it does nothing.
//!
//! - [`REFERENCE_TABLES`] (the tenants and the lookups made before the tenant is known: key
//!   hashes → tenant) become reference tables, copied to every node.
//! - Every other table of the schema with a `tenant_id` column is distributed by it, all in
//!   the co-location group of `tokens`, so that one tenant's rows of every table sit on one node
//!   and a statement naming one tenant runs there alone.
//!
//! What Citus refuses, and how this step gets past it (each measured on Citus 13.2):
//! - **Statement triggers with transition tables** (`tokens_counted_*`, `tokens_month_created`):
//!   on a shard their `INSERT … SELECT … FROM added` fails ("could not find named tuplestore").
//!   They are replaced by [`ROW_TRIGGERS`]: one row trigger that upserts the token's counter rows
//!   by its own `tenant_id`. On a shard that upsert is a router statement to the co-located
//!   shard of `token_counts`/`token_months`, on the same node, which Citus runs inside a
//!   trigger (it refuses only remote work there). Single-node PostgreSQL keeps the statement
//!   triggers: a group insert updates each counter row once there.
//! - **Foreign keys from a local table to a distributed one**: making `tenants` a reference
//!   table turns every table that refers to it into a Citus local table, and `tokens` then
//!   cannot be distributed while `token_associations` (local) refers to it. So every foreign key
//!   touching a table to be converted is dropped first and added again once all are converted.
//!
//! All of it is one transaction: a failure leaves the schema as it was, never half distributed.
//! Running it again on a distributed schema changes nothing; new tables of later migrations are
//! distributed by the next run.

use crate::m20261209_000019_key_change_notices as notices;
use sea_orm_migration::sea_orm::{
    ConnectionTrait, DatabaseBackend, DatabaseConnection, DbErr, Statement, TransactionTrait,
};

/// The tables copied whole to every node: small, global, read before the tenant is known.
/// docs/persistence.md names the same on its line `Reference tables:` (a test compares them).
pub const REFERENCE_TABLES: [&str; 4] = ["tenants", "applications", "sessions", "proxies"];

/// The table whose co-location group every distributed table joins.
const ANCHOR: &str = "tokens";

/// What [`distribute`] found and did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// Not PostgreSQL, or no `citus` extension in this database: nothing to do.
    NotCitus,
    /// Every table already was what it should be.
    Unchanged,
    /// These tables were converted now (reference tables first).
    Converted(Vec<String>),
}

/// The statement triggers of migrations 12 and 16, dropped before `tokens` is distributed.
const STATEMENT_TRIGGERS_DROPPED: [&str; 4] = [
    "DROP TRIGGER IF EXISTS tokens_counted_insert ON tokens",
    "DROP TRIGGER IF EXISTS tokens_counted_delete ON tokens",
    "DROP TRIGGER IF EXISTS tokens_counted_update ON tokens",
    "DROP TRIGGER IF EXISTS tokens_month_created ON tokens",
];

/// The row trigger that keeps `token_counts` and `token_months` on Citus (see the module
/// documentation): the same sums as the statement triggers of migrations 12 and 16, counter
/// row by counter row. The counter row of a change is the writing backend's (`shard` from
/// its process id), not the token's: a row trigger takes counter rows in the order of the
/// statement's rows, and two group inserts over the same containers, each taking the rows
/// its tokens' ids pick, deadlocked (measured: `token_insert_contract`). A delete may so
/// subtract on another row than its insert added to; only the sum is read.
/// Created once every table is distributed: the rows `create_distributed_table` copies into the
/// shards are counted already, and their copy must not fire it. One statement each: Citus
/// sends each to the workers as one prepared statement.
pub const ROW_TRIGGERS: [&str; 4] = [
    "CREATE OR REPLACE FUNCTION tokens_row_counted() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    INSERT INTO token_counts AS c (tenant_id, container, token_type, shard, live)
    VALUES (OLD.tenant_id, OLD.container, OLD.token_type, (pg_backend_pid() & 15)::smallint, -1)
    ON CONFLICT (tenant_id, container, token_type, shard) DO UPDATE SET live = c.live - 1;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    INSERT INTO token_counts AS c (tenant_id, container, token_type, shard, live)
    VALUES (NEW.tenant_id, NEW.container, NEW.token_type, (pg_backend_pid() & 15)::smallint, 1)
    ON CONFLICT (tenant_id, container, token_type, shard) DO UPDATE SET live = c.live + 1;
  END IF;
  IF TG_OP = 'INSERT' THEN
    INSERT INTO token_months AS m (tenant_id, month, shard, created)
    VALUES (NEW.tenant_id, to_char(NEW.created_at AT TIME ZONE 'UTC', 'YYYY-MM'),
            (pg_backend_pid() & 15)::smallint, 1)
    ON CONFLICT (tenant_id, month, shard) DO UPDATE SET created = m.created + 1;
  END IF;
  RETURN NULL;
END
$body$",
    "CREATE TRIGGER tokens_row_inserted AFTER INSERT ON tokens
  FOR EACH ROW EXECUTE FUNCTION tokens_row_counted()",
    "CREATE TRIGGER tokens_row_deleted AFTER DELETE ON tokens
  FOR EACH ROW EXECUTE FUNCTION tokens_row_counted()",
    "CREATE TRIGGER tokens_row_moved AFTER UPDATE OF tenant_id, container, token_type ON tokens
  FOR EACH ROW WHEN (OLD.tenant_id IS DISTINCT FROM NEW.tenant_id
    OR OLD.container IS DISTINCT FROM NEW.container
    OR OLD.token_type IS DISTINCT FROM NEW.token_type)
  EXECUTE FUNCTION tokens_row_counted()",
];

async fn strings<C: ConnectionTrait>(db: &C, sql: &str) -> Result<Vec<String>, DbErr> {
    let rows = db
        .query_all_raw(Statement::from_string(DatabaseBackend::Postgres, sql))
        .await?;
    rows.iter().map(|r| r.try_get_by_index(0)).collect()
}

async fn run<C: ConnectionTrait>(db: &C, sql: &str) -> Result<(), DbErr> {
    db.execute_unprepared(sql).await.map(|_| ())
}

/// A name PostgreSQL returned, quoted as an identifier.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A text literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Refuses a cluster the schema cannot be spread over: no active worker, or a worker where
/// this database lacks the extension. Names what is missing.
async fn check_cluster<C: ConnectionTrait>(db: &C) -> Result<(), DbErr> {
    let workers = strings(
        db,
        "SELECT nodename || ':' || nodeport FROM pg_dist_node \
         WHERE groupid <> 0 AND noderole = 'primary' AND isactive ORDER BY 1",
    )
    .await?;
    if workers.is_empty() {
        return Err(DbErr::Custom(
            "Citus is installed in this database but has no active worker node: add the \
             workers (SELECT citus_add_node(host, port)) before migrating"
                .into(),
        ));
    }
    let lacking = strings(
        db,
        "SELECT nodename || ':' || nodeport || ' (' || result || ')' \
         FROM run_command_on_workers($$SELECT count(*) FROM pg_extension WHERE extname = 'citus'$$) \
         WHERE NOT success OR result <> '1' ORDER BY 1",
    )
    .await?;
    if !lacking.is_empty() {
        return Err(DbErr::Custom(format!(
            "the citus extension is missing in this database on worker node(s) {}: create the \
             database and run CREATE EXTENSION citus on each before migrating",
            lacking.join(", ")
        )));
    }
    Ok(())
}

/// Distributes the schema when this database has Citus; see the module documentation.
///
/// # Errors
/// A cluster without an active worker, or with a worker lacking the extension; any refusal
/// of Citus (the transaction is then rolled back whole).
pub async fn distribute(db: &DatabaseConnection) -> Result<Distribution, DbErr> {
    if db.get_database_backend() != DatabaseBackend::Postgres
        || strings(
            db,
            "SELECT extname::text FROM pg_extension WHERE extname = 'citus'",
        )
        .await?
        .is_empty()
    {
        return Ok(Distribution::NotCitus);
    }
    // The reference tables and the tenant-owned tables of this schema that are not yet Citus
    // tables of their kind.
    let references = REFERENCE_TABLES.map(literal).join(", ");
    let pending = strings(
        db,
        &format!(
            "SELECT c.relname::text FROM pg_class c \
             WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') \
               AND (c.relname IN ({references}) OR EXISTS (SELECT 1 FROM pg_attribute a \
                    WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped)) \
               AND NOT EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = c.oid \
                   AND p.partmethod = CASE WHEN c.relname IN ({references}) THEN 'n' ELSE 'h' END) \
             ORDER BY c.relname IN ({references}) DESC, c.relname <> {anchor}, c.relname",
            anchor = literal(ANCHOR),
        ),
    )
    .await?;
    if pending.is_empty() {
        return Ok(Distribution::Unchanged);
    }
    check_cluster(db).await?;
    let txn = db.begin().await?;
    // One connection per node for the whole transaction: Citus requires it when DDL, function
    // creation and reference tables meet in one transaction.
    run(
        &txn,
        "SET LOCAL citus.multi_shard_modify_mode TO 'sequential'",
    )
    .await?;
    run(&txn, "SET LOCAL citus.enable_unsafe_triggers TO on").await?;
    let list = pending
        .iter()
        .map(|t| literal(t))
        .collect::<Vec<_>>()
        .join(", ");
    let touching = format!(
        "FROM pg_constraint k WHERE k.contype = 'f' \
           AND k.connamespace = current_schema()::regnamespace \
           AND (k.conrelid::regclass::text IN ({list}) OR k.confrelid::regclass::text IN ({list}))"
    );
    let keys = strings(
        &txn,
        &format!(
            "SELECT format('ALTER TABLE %s ADD CONSTRAINT %I %s', k.conrelid::regclass, \
                    k.conname, pg_get_constraintdef(k.oid)) {touching} ORDER BY k.conname"
        ),
    )
    .await?;
    for drop in strings(
        &txn,
        &format!(
            "SELECT format('ALTER TABLE %s DROP CONSTRAINT %I', k.conrelid::regclass, k.conname) \
             {touching} ORDER BY k.conname"
        ),
    )
    .await?
    {
        run(&txn, &drop).await?;
    }
    if pending
        .iter()
        .any(|t| notices::WATCHED.contains(&t.as_str()))
    {
        // Migration 19's change notices: on Citus nothing is kept in memory, nothing listens.
        for drop in notices::TRIGGERS_DROPPED {
            run(&txn, drop).await?;
        }
    }
    let anchored = pending.iter().any(|t| t == ANCHOR);
    if anchored {
        for drop in STATEMENT_TRIGGERS_DROPPED {
            run(&txn, drop).await?;
        }
    }
    for table in &pending {
        let sql = if REFERENCE_TABLES.contains(&table.as_str()) {
            format!("SELECT create_reference_table({})", literal(&ident(table)))
        } else if table == ANCHOR {
            format!(
                "SELECT create_distributed_table({}, 'tenant_id', colocate_with => 'none')",
                literal(&ident(table))
            )
        } else {
            format!(
                "SELECT create_distributed_table({}, 'tenant_id', colocate_with => {})",
                literal(&ident(table)),
                literal(ANCHOR)
            )
        };
        call(&txn, &sql).await?;
    }
    if anchored {
        for create in ROW_TRIGGERS {
            run(&txn, create).await?;
        }
    }
    for add in &keys {
        run(&txn, add).await?;
    }
    txn.commit().await?;
    Ok(Distribution::Converted(pending))
}

/// Runs a `SELECT` of a function for its effect.
async fn call<C: ConnectionTrait>(db: &C, sql: &str) -> Result<(), DbErr> {
    db.query_all_raw(Statement::from_string(DatabaseBackend::Postgres, sql))
        .await
        .map(|_| ())
}
