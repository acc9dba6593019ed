//! PostgreSQL's single token inserts, committed together: concurrent `POST /tokens` rows go in
//! as one statement and one commit, on a thread of their own ("pg-writer", its own runtime and
//! connection), and each caller is answered after that commit with its own outcome.
//!
//! Why: a tokenize cost PostgreSQL ~500 µs of CPU, most of it per statement and per commit
//! (the insert, its indexes, the count trigger, the WAL flush); a group pays those once.
//!
//! One statement for any group size, so it is prepared once: `INSERT … SELECT * FROM UNNEST`
//! of one array per column, `ON CONFLICT DO NOTHING RETURNING tenant_id, id`. A row whose
//! (tenant, id) is already in the group is held back and inserted alone after it, so a
//! returned pair stands for one caller. A row that is not returned hit a unique index (an id
//! taken, a dedup key stored, or a twin with the same dedup key in the group) and is inserted
//! again alone, which names the index it hits. A group the database refuses as a whole (a tenant deleted
//! meanwhile: its foreign key) is inserted row by row, so each caller gets its own answer. A
//! failure of the connection is every caller's error, never retried (the rows may have been
//! committed); the connection is then opened anew, and one idle for over a second is pinged
//! before it carries rows.
//!
//! Rows whose caller has left before their turn are not written.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, LazyLock};
use std::time::Instant;

use sea_orm::sqlx::postgres::{PgConnectOptions, PgConnection};
use sea_orm::sqlx::{self, Connection};
use sea_orm::{DbErr, RuntimeErr};
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::TokenWrite;
use tokenvault_domain::token::StoredToken;
use tokio::sync::{Notify, mpsc, oneshot};
use uuid::Uuid;

use crate::supervise::{self, CHECK_AFTER_IDLE, Supervised, answered, within};
use tokenvault_persistence_shared::entity::token;
use tokenvault_persistence_shared::rows;
use tokenvault_persistence_shared::rows::token::{
    NOT_INSERTED, NewLists, insert_order, put_new, write_conflict,
};
use tokenvault_persistence_shared::rows::write::{PgArrays, PgValues, pg_params, put_row};

mod citus;

/// Rows in one statement at most.
const MAX_GROUP: usize = 256;

/// The columns a new row is written with, the entity's in its order (`rows/token.rs`).
fn columns() -> String {
    rows::columns::<token::Column>(None, NOT_INSERTED)
}

/// Takes the row's tenant as its foreign key would (`KEY SHARE`), but skips a tenant whose row
/// is locked against it: only the last step of a tenant's delete does that, and every tenant's
/// inserts queue behind this writer, so a tenant being deleted has its rows left out at once
/// instead of holding the others'. A row left out this way is written alone ([`SINGLE_SQL`]),
/// which answers it [`TokenWrite::Missing`] (a 401, as a deleted tenant's foreign key is).
const TENANT_FREE: &str =
    "EXISTS (SELECT 1 FROM tenants t WHERE t.id = u.tenant_id FOR KEY SHARE SKIP LOCKED)";

/// Whether a row's tenant is live (neither gone nor a tombstone): asked only of a row
/// [`TENANT_FREE`] left out.
const TENANT_LIVE: &str =
    "SELECT EXISTS (SELECT 1 FROM tenants WHERE id = $1 AND deleted_at IS NULL)";

/// The group insert; rows left out by a unique index or by [`TENANT_FREE`] are not returned.
/// One array per column, each cast to its column's type, bound in the codec's order
/// (`rows::token::put_new`).
static GROUP_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO tokens ({cols}) SELECT u.* FROM UNNEST({arrays}) AS u({cols}) \
         WHERE {TENANT_FREE} ON CONFLICT DO NOTHING RETURNING tenant_id, id",
        cols = columns(),
        arrays = pg_params::<token::Column>(NOT_INSERTED, "[]"),
    )
});

/// One row alone, to learn which index it hits; no row written and no error: its tenant is
/// gone or being deleted ([`TENANT_FREE`]).
static SINGLE_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO tokens ({cols}) SELECT u.* FROM (VALUES ({values})) AS u({cols}) \
         WHERE {TENANT_FREE}",
        cols = columns(),
        values = pg_params::<token::Column>(NOT_INSERTED, ""),
    )
});

/// The writer's two statements: one PostgreSQL's, or Citus's.
#[derive(Clone, Copy)]
struct Sql {
    group: &'static str,
    single: &'static str,
    /// Citus's: each statement runs in a transaction of its own whose lock waits are bounded
    /// on the workers too ([`run_statement`]), and a tenant whose row such a wait ran into is
    /// asked whether it is being deleted ([`citus::locked_out`]).
    citus: bool,
}

impl Sql {
    fn of(citus: bool) -> Self {
        if citus {
            Self {
                group: citus::GROUP_SQL.as_str(),
                single: citus::SINGLE_SQL.as_str(),
                citus: true,
            }
        } else {
            Self {
                group: GROUP_SQL.as_str(),
                single: SINGLE_SQL.as_str(),
                citus: false,
            }
        }
    }
}

type Reply = oneshot::Sender<Result<TokenWrite, RepoError>>;

struct Pending {
    row: StoredToken,
    lists: NewLists,
    reply: Reply,
}

/// The writer of one database: hands rows to its thread.
#[derive(Debug)]
pub(crate) struct PgWriter {
    rows: mpsc::UnboundedSender<Pending>,
    thread: Supervised,
}

impl PgWriter {
    /// Starts the thread; it ends when the writer is dropped (every sender gone) or stopped.
    /// `per_tenant` (Citus): each group is written one statement per tenant.
    pub(crate) fn start(options: PgConnectOptions, per_tenant: bool) -> std::io::Result<Self> {
        let (rows, mut queue) = mpsc::unbounded_channel();
        let thread = supervise::spawn("pg-writer", move |rt, stop| {
            rt.block_on(run(&options, &mut queue, stop, per_tenant));
        })?;
        Ok(Self { rows, thread })
    }

    /// Stops the thread once the rows queued before are written; later inserts fail.
    pub(crate) async fn stop(&self, until: tokio::time::Instant) {
        self.thread.stop(until).await;
    }

    /// Inserts `row` with the rows waiting beside it; its own outcome, after the commit.
    pub(crate) async fn insert(
        &self,
        row: StoredToken,
        lists: NewLists,
    ) -> Result<TokenWrite, RepoError> {
        let (reply, answer) = oneshot::channel();
        self.rows
            .send(Pending { row, lists, reply })
            .map_err(|_| RepoError::Backend("the PostgreSQL writer has stopped".into()))?;
        answer
            .await
            .map_err(|_| RepoError::Backend("the PostgreSQL writer dropped an insert".into()))?
    }
}

async fn run(
    options: &PgConnectOptions,
    queue: &mut mpsc::UnboundedReceiver<Pending>,
    stop: &Notify,
    per_tenant: bool,
) {
    let mut conn: Option<PgConnection> = None;
    let mut idle_since = Instant::now();
    while let Some(first) = supervise::next(queue, stop).await {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match queue.try_recv() {
                Ok(next) => group.push(next),
                Err(_) => break,
            }
        }
        group.retain(|p| !p.reply.is_closed());
        if group.is_empty() {
            continue;
        }
        #[cfg(test)]
        assert!(
            group.iter().all(|p| p.row.id != tests::A_BUG),
            "a bug in a group"
        );
        // A connection idle for a while is checked first (a ping, before any row is sent): a
        // server restart or an administrator may have closed it, and a write is never retried.
        if idle_since.elapsed() > CHECK_AFTER_IDLE
            && let Some(live) = conn.as_mut()
            && let Err(e) = within(live.ping()).await
        {
            tracing::debug!(error = %e, "the idle PostgreSQL writer connection is gone; reconnecting");
            conn = None;
        }
        let live = match conn.as_mut() {
            Some(live) => live,
            None => match within(supervise::connect(options)).await {
                Ok(opened) => conn.insert(opened),
                Err(e) => {
                    answer_all(group, &e);
                    continue;
                }
            },
        };
        let started = Instant::now();
        let rows = group.len();
        let written = if per_tenant {
            write_per_tenant(live, group).await
        } else {
            write_group(live, group, Sql::of(false)).await
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, "PostgreSQL group insert failed; reconnecting");
            conn = None;
        }
        tracing::debug!(
            rows,
            elapsed_us = started.elapsed().as_micros(),
            "pg group commit"
        );
        idle_since = Instant::now();
    }
}

fn backend(e: &sqlx::Error) -> RepoError {
    let cause = format!("token insert: {e}").into();
    if tokenvault_persistence_shared::repo_error::sqlx_node_unreachable(e) {
        RepoError::Unavailable(cause)
    } else {
        RepoError::Backend(cause)
    }
}

/// Whether `e` is PostgreSQL's `lock_not_available` (`55P03`): the connection's
/// `lock_timeout` ran out.
fn lock_not_available(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => db.code().as_deref() == Some("55P03"),
        _ => false,
    }
}

fn answer_all(group: Vec<Pending>, e: &sqlx::Error) {
    for p in group {
        let _ = p.reply.send(Err(backend(e)));
    }
}

/// Writes `group` one statement per tenant, each its own transaction: on Citus a statement
/// with one tenant's rows runs on that tenant's node alone, where one with many tenants' rows
/// is pulled to the coordinator and copied out to every shard it touches (one shard group per
/// statement, docs/decisions.md §13). `Err` when the connection failed (every caller has had
/// its answer).
async fn write_per_tenant(conn: &mut PgConnection, group: Vec<Pending>) -> Result<(), sqlx::Error> {
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
async fn write_group(
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

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn each_array_and_value_is_cast_to_its_columns_type() {
        let group = GROUP_SQL.as_str();
        for cast in ["$1::uuid[]", "$5::text[]", "$6::bytea[]", "$16::bool[]"] {
            assert!(group.contains(cast), "{cast} in {group}");
        }
        assert!(
            !group.contains("$19"),
            "version is left to its default: {group}"
        );
        let single = SINGLE_SQL.as_str();
        for cast in [
            "$2::varchar,",
            "$12::timestamptz,",
            "$16::bool,",
            "$18::text)",
        ] {
            assert!(single.contains(cast), "{cast} in {single}");
        }
    }

    /// The id of a row whose group panics (a bug, as a test brings it about).
    pub(super) const A_BUG: &str = "tokenvault-test-a-bug";

    fn row(id: &str) -> StoredToken {
        tokenvault_persistence_shared::rows::token::sample(id)
    }

    #[tokio::test]
    async fn the_group_writer_carries_on_after_a_panic() {
        // Nothing answers on this port: a live writer fails each row at connecting, a stopped
        // one says it has stopped.
        let options = PgConnectOptions::new().host("127.0.0.1").port(1);
        let writer = PgWriter::start(options, false).unwrap();
        let cause = |e: RepoError| {
            std::error::Error::source(&e).map_or_else(String::new, ToString::to_string)
        };
        let panicked = cause(
            writer
                .insert(row(A_BUG), NewLists::of(&row(A_BUG)))
                .await
                .unwrap_err(),
        );
        assert!(panicked.contains("dropped an insert"), "{panicked}");
        for _ in 0..2 {
            let after = cause(
                writer
                    .insert(row("t"), NewLists::of(&row("t")))
                    .await
                    .unwrap_err(),
            );
            assert!(after.starts_with("token insert"), "{after}");
        }
    }
}
