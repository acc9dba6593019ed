//! The audit append on PostgreSQL: one transaction that moves the head as SQLite's append does
//! (`sqlite/audit_append.rs`), then sends the entries with `COPY … FROM STDIN` in PostgreSQL's binary
//! format, on a thread of its own ("pg-audit": its own runtime and connection).
//!
//! Why `COPY`: under the PostgreSQL detokenize load the flush was a third of PostgreSQL's CPU
//! (~17 µs per entry, against ~35 µs for the request's own read), most of it parsing and
//! binding multi-row `INSERT`s of 5,500 parameters, and each pooled statement paid the pool's
//! ping. Binary rows carry each value with its length, so no text from a caller (an entity id,
//! a trace id) is ever escaped or parsed as part of a statement.
//!
//! Why a thread: flushes run on the server's runtime and, before `GET /logs` reads, on an HTTP
//! worker's. A connection belongs to the runtime that opened it, and one opened by a worker
//! fails once that worker stops: a shared connection cut the final flush at shutdown. Here the
//! connection lives and dies with the thread's runtime. A failure of the connection before the
//! `COMMIT` was sent cannot have written anything, so that append is tried once more on a new
//! connection. A failure during the `COMMIT`, or an append that outlived [`DEADLINE`], may have
//! committed: it is the caller's error, and the domain looks in the chain before writing those
//! entries again (`settle` in `domain/service/audit.rs`).

use std::sync::LazyLock;
use std::time::Instant;

use sea_orm::sqlx::postgres::{PgConnectOptions, PgConnection, PgDatabaseError};
use sea_orm::sqlx::{self, Connection};
use tokenvault_domain::RepoError;
use tokenvault_domain::audit::{AppendOutcome, AuditEntry, AuditHead};
use tokio::sync::{Notify, mpsc, oneshot};
use uuid::Uuid;

use crate::supervise::answered as database_answered;
use crate::supervise::{self, CHECK_AFTER_IDLE, DEADLINE, Supervised, timed_out, within};
use tokenvault_persistence_shared::audit_rows::{LOCK_TENANT, SEQ_INDEX, first_head, move_head};
use tokenvault_persistence_shared::entity::audit_entry;
use tokenvault_persistence_shared::rows::audit_entry as audit_entry_row;
use tokenvault_persistence_shared::rows::columns;
use tokenvault_persistence_shared::rows::copy::CopyRows;
use tokenvault_persistence_shared::rows::write::put_row;

/// On Citus, the tenant's row read without a lock: `tenants` is a reference table there, whose
/// row lock is taken on every node, so one node down would fail every tenant's appends. There
/// is no cascade to deadlock with: a tenant's rows are purged table by table before its
/// tombstone goes (`tenant_purge.rs`), and the entries' foreign key, checked on the tenant's
/// node, refuses a tenant gone meanwhile.
const LIVE_TENANT: &str = "SELECT 1 FROM tenants WHERE id = $1";

static FIRST_HEAD: LazyLock<String> = LazyLock::new(|| first_head(|n| format!("${n}")));

static MOVE_HEAD: LazyLock<String> = LazyLock::new(|| move_head(|n| format!("${n}")));

/// The entries' columns, the entity's in its order (`entity/audit_entry.rs`), in which
/// [`binary_rows`] writes each tuple's fields (`rows/audit_entry.rs`).
static COPY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "COPY audit_log ({}) FROM STDIN (FORMAT binary)",
        columns::<audit_entry::Column>(None, &[])
    )
});

/// One append, as the thread runs it.
struct Append {
    tenant_id: Uuid,
    expected: Option<AuditHead>,
    /// The last entry's seq and hash: the head after the append.
    seq: i64,
    hash: String,
    /// The entries as binary `COPY` data.
    rows: Vec<u8>,
    reply: oneshot::Sender<Result<AppendOutcome, RepoError>>,
}

enum Message {
    Append(Append),
    /// Answered once every append queued before it has run.
    Settled(oneshot::Sender<()>),
    /// A bug, as a test brings it about.
    #[cfg(test)]
    Panic,
}

/// The audit appender of one database: hands appends to its thread, which ends when this is
/// dropped.
#[derive(Debug)]
pub(crate) struct AuditWriter {
    queue: mpsc::UnboundedSender<Message>,
    thread: Supervised,
}

fn stopped() -> RepoError {
    RepoError::Backend("the PostgreSQL audit writer has stopped".into())
}

impl AuditWriter {
    /// Starts the thread, which connects with `options` on its first append.
    ///
    /// `citus`: the tenant is checked without a lock on its row (`LIVE_TENANT`), and each
    /// append's lock waits are bounded on the workers too (`supervise::begin_on_citus`).
    pub(crate) fn start(options: PgConnectOptions, citus: bool) -> std::io::Result<Self> {
        let (queue, mut rx) = mpsc::unbounded_channel();
        let thread = supervise::spawn("pg-audit", move |rt, stop| {
            rt.block_on(run(&options, &mut rx, stop, citus));
        })?;
        Ok(Self { queue, thread })
    }

    /// Stops the thread once the appends queued before have run; later appends fail.
    pub(crate) async fn stop(&self, until: tokio::time::Instant) {
        self.thread.stop(until).await;
    }

    /// Appends `entries` (checked by the caller) after `expected`; whatever else it answers,
    /// it wrote nothing. An append whose caller left before its turn is not run.
    pub(crate) async fn append(
        &self,
        tenant_id: Uuid,
        expected: Option<AuditHead>,
        entries: &[AuditEntry],
    ) -> Result<AppendOutcome, RepoError> {
        let Some(last) = entries.last() else {
            return Ok(AppendOutcome::Appended);
        };
        let (reply, answer) = oneshot::channel();
        let append = Append {
            tenant_id,
            expected,
            seq: last.seq,
            hash: last.hash.clone(),
            rows: binary_rows(entries)?,
            reply,
        };
        self.queue
            .send(Message::Append(append))
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    /// Waits until every append queued before this call has run (its caller may have left):
    /// a read of the head or the chain must see its outcome.
    pub(crate) async fn settled(&self) -> Result<(), RepoError> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Message::Settled(reply))
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())
    }
}

async fn run(
    options: &PgConnectOptions,
    queue: &mut mpsc::UnboundedReceiver<Message>,
    stop: &Notify,
    citus: bool,
) {
    let mut conn: Option<PgConnection> = None;
    let mut idle_since = Instant::now();
    while let Some(message) = supervise::next(queue, stop).await {
        let append = match message {
            Message::Settled(reply) => {
                let _ = reply.send(());
                continue;
            }
            #[cfg(test)]
            Message::Panic => panic!("a bug in an append"),
            Message::Append(append) if append.reply.is_closed() => continue,
            Message::Append(append) => append,
        };
        // A connection idle for a while is checked first: a server restart or an
        // administrator may have closed it.
        if idle_since.elapsed() > CHECK_AFTER_IDLE
            && let Some(live) = conn.as_mut()
            && within(live.ping()).await.is_err()
        {
            conn = None;
        }
        let mut outcome = Err(Failed::Before(sqlx::Error::PoolClosed));
        for _attempt in 0..2 {
            let live = match conn.as_mut() {
                Some(live) => live,
                None => match within(supervise::connect(options)).await {
                    Ok(opened) => conn.insert(opened),
                    Err(e) => {
                        outcome = Err(Failed::Before(e));
                        break;
                    }
                },
            };
            // Past the deadline the transaction may be anywhere, its `COMMIT` included.
            outcome = tokio::time::timeout(DEADLINE, write(live, &append, citus))
                .await
                .unwrap_or_else(|_| Err(Failed::AtCommit(timed_out())));
            match &outcome {
                Err(Failed::Before(e) | Failed::AtCommit(e)) if !answered(e) => {
                    conn = None;
                    // Nothing was committed before the `COMMIT` was sent: once more.
                    if matches!(outcome, Err(Failed::Before(_))) {
                        tracing::debug!(error = %e, "the PostgreSQL audit connection failed; appending on a new one");
                        continue;
                    }
                }
                _ => {}
            }
            break;
        }
        idle_since = Instant::now();
        let result = outcome
            .map_err(|(Failed::Before(e) | Failed::AtCommit(e))| RepoError::Backend(Box::new(e)));
        let _ = append.reply.send(result);
    }
}

/// Whether the connection is still in step after `e`: the database answered (a constraint, a
/// bad value), or the tenant was found gone.
fn answered(e: &sqlx::Error) -> bool {
    database_answered(e) || matches!(e, sqlx::Error::RowNotFound)
}

/// How an append failed.
enum Failed {
    /// Before the `COMMIT` was sent: nothing was written.
    Before(sqlx::Error),
    /// While committing: it may have been written.
    AtCommit(sqlx::Error),
}

/// One append's transaction on `conn`.
async fn write(conn: &mut PgConnection, a: &Append, citus: bool) -> Result<AppendOutcome, Failed> {
    let (begun, tenant_check) = if citus {
        (supervise::begin_on_citus(conn).await, LIVE_TENANT)
    } else {
        (
            sqlx::raw_sql("BEGIN").execute(&mut *conn).await.map(drop),
            LOCK_TENANT,
        )
    };
    if let Err(e) = begun {
        // On Citus, begun but refused a setting: not left in the failed transaction.
        if citus && answered(&e) {
            rollback(conn).await?;
        }
        return Err(Failed::Before(e));
    }
    match moved_and_copied(conn, a, tenant_check).await {
        Ok(AppendOutcome::Appended) => {
            sqlx::raw_sql("COMMIT")
                .execute(&mut *conn)
                .await
                .map_err(Failed::AtCommit)?;
            Ok(AppendOutcome::Appended)
        }
        Ok(refused) => rollback(conn).await.map(|()| refused),
        Err(e) if answered(&e) => {
            rollback(conn).await?;
            Err(Failed::Before(e))
        }
        Err(e) => Err(Failed::Before(e)),
    }
}

async fn rollback(conn: &mut PgConnection) -> Result<(), Failed> {
    sqlx::raw_sql("ROLLBACK")
        .execute(conn)
        .await
        .map(drop)
        .map_err(Failed::Before)
}

/// Moves the head, then copies the entries: `HeadMoved` when another appender moved the head
/// first, `SeqTaken` when the head moved but a row beyond it held an entry's place.
async fn moved_and_copied(
    conn: &mut PgConnection,
    a: &Append,
    tenant_check: &'static str,
) -> Result<AppendOutcome, sqlx::Error> {
    // The tenant's row first (`audit_rows::LOCK_TENANT`). A tenant already gone is an error, and
    // the domain then drops its events.
    if sqlx::query(tenant_check)
        .bind(a.tenant_id)
        .fetch_optional(&mut *conn)
        .await?
        .is_none()
    {
        return Err(sqlx::Error::RowNotFound);
    }
    let moved = match &a.expected {
        None => sqlx::query(sqlx::AssertSqlSafe(FIRST_HEAD.as_str()))
            .bind(a.tenant_id)
            .bind(a.seq)
            .bind(&a.hash)
            .execute(&mut *conn)
            .await?
            .rows_affected(),
        Some(head) => sqlx::query(sqlx::AssertSqlSafe(MOVE_HEAD.as_str()))
            .bind(a.seq)
            .bind(&a.hash)
            .bind(a.tenant_id)
            .bind(head.seq)
            .bind(&head.hash)
            .execute(&mut *conn)
            .await?
            .rows_affected(),
    };
    if moved != 1 {
        return Ok(AppendOutcome::HeadMoved);
    }
    let mut copy = conn.copy_in_raw(COPY.as_str()).await?;
    // Should `send` fail, the connection is out of step and is closed.
    copy.send(a.rows.as_slice()).await?;
    match copy.finish().await {
        Ok(_) => Ok(AppendOutcome::Appended),
        Err(e) if seq_taken(&e) => Ok(AppendOutcome::SeqTaken),
        Err(e) => Err(e),
    }
}

/// Whether `err` is a violation of the unique (tenant, seq) index: by SQLSTATE and constraint
/// on one PostgreSQL; on Citus, whose `COPY` reports a shard's violation as `XX000` with the
/// worker's message naming the shard's index (`…_seq_102091`), by that message.
fn seq_taken(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => db.try_downcast_ref::<PgDatabaseError>().is_some_and(|pg| {
            (pg.code() == "23505" && pg.constraint() == Some(SEQ_INDEX))
                || (pg.code() == "XX000"
                    && pg
                        .message()
                        .starts_with("duplicate key value violates unique constraint")
                    && pg.message().contains(&format!("\"{SEQ_INDEX}_")))
        }),
        _ => false,
    }
}

/// `entries` as the data of a binary `COPY`, in the statement's column order
/// (`rows/audit_entry.rs`).
fn binary_rows(entries: &[AuditEntry]) -> Result<Vec<u8>, RepoError> {
    let mut rows = CopyRows::new(entries.len() * 256);
    for entry in entries {
        put_row(&mut rows, &[], |row| audit_entry_row::put(entry, row))
            .map_err(RepoError::Backend)?;
    }
    Ok(rows.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_appender_carries_on_after_a_panic() {
        // Nothing connects before an append: the address need not answer.
        let options = PgConnectOptions::new().host("127.0.0.1").port(1);
        let writer = AuditWriter::start(options, false).unwrap();
        writer.queue.send(Message::Panic).unwrap();
        writer.settled().await.unwrap();
        writer.queue.send(Message::Panic).unwrap();
        writer.settled().await.unwrap();
    }
}
