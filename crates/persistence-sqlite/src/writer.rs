//! The bulk writer of a SQLite file: one thread, one rusqlite connection, cached statements.
//!
//! SQLite takes one writer at a time. The writes that come in a steady stream under load (every
//! `POST /tokens`, the audit flush, the activity flush) go through this thread instead of the
//! SeaORM pool, for three reasons measured on the tokenize path (docs/performance-journal.md):
//! - through sqlx each statement (begin, insert, commit) was a hand-off to the driver's worker
//!   thread and back, and each group size a new SQL text to parse: a group of nine tokens took
//!   ~1.7 ms, here ~0.7 ms;
//! - SQLite empties a connection's page cache whenever another connection wrote, so on the pool
//!   every transaction read its index pages back from the file; one connection keeps them;
//! - the audit flush on the pool held the write lock for tens of milliseconds while every insert
//!   waited (half the token writer's time in one profile); here it is one more job in the queue.
//!
//! Token inserts are committed in groups (`sqlite/group_commit.rs`); any other write is a job run on
//! the connection in the order it arrived. The thread belongs to no HTTP worker's runtime, so it
//! neither stops with one nor competes with its requests. It ends when the database is closed
//! (`Writer::stop`) or its queue's last sender (with the file's `DirectReads`, `sqlite/direct.rs`) is
//! dropped.

use std::path::PathBuf;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::{TokenWrite, month_of};
use tokenvault_domain::token::StoredToken;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::group_commit::{self, Pending};
use tokenvault_persistence_shared::threads::Joinable;

/// The most messages (token rows and jobs) taken at once; the rows among them go in one
/// transaction.
const MAX_BATCH: usize = 256;
/// Messages waiting for the writer; a caller beyond this waits to enqueue.
const QUEUE: usize = 4096;
/// How long the writer waits for SQLite's write lock held by another connection (SeaORM's
/// writes), as the pool does.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// The writer's page cache (KiB): the hot index pages of `tokens`, `audit_log` and
/// `token_activity`.
const CACHE_KIB: i64 = 8 * 1024;
/// The writer connection's own automatic checkpoint (pages): a bound on the log should the
/// checkpoint thread (`sqlite/checkpoint.rs`) stop or fall behind.
const AUTOCHECKPOINT: u32 = 10_000;

/// A write to run on the writer's connection.
pub(crate) type Job = Box<dyn FnOnce(&Connection) + Send>;

/// What the writer is asked to do. (Token rows are the common message, so they are not boxed.)
#[allow(clippy::large_enum_variant)]
enum Message {
    Token(Pending),
    Job(Job),
    /// Take nothing new; end once what is queued is written.
    Stop,
}

/// A SQLite database file on disk, as `connect` opened it.
#[derive(Clone, Debug)]
pub(crate) struct OnDisk {
    /// The file SQLite opened.
    pub(crate) path: PathBuf,
    /// `synchronous=NORMAL` instead of `FULL` (`DbOptions`).
    pub(crate) synchronous_normal: bool,
}

/// The queue of a database file's writer thread.
#[derive(Debug)]
pub(crate) struct Writer {
    queue: mpsc::Sender<Message>,
    thread: Joinable,
}

/// The writer is gone (it could not open the database, or the process is stopping).
#[derive(Debug, thiserror::Error)]
#[error("the SQLite writer stopped")]
struct WriterStopped;

fn stopped() -> RepoError {
    RepoError::Backend(Box::new(WriterStopped))
}

impl Writer {
    /// Opens the writer's connection on `file` and starts its thread; the error when either
    /// fails (`connect` then fails).
    pub(crate) fn start(file: &OnDisk) -> std::io::Result<Self> {
        let conn = open(file).map_err(std::io::Error::other)?;
        let (queue, rx) = mpsc::channel(QUEUE);
        let thread = Joinable::spawn("sqlite-writer", move || {
            run(&conn, rx);
            truncate_log(&conn);
        })?;
        Ok(Self { queue, thread })
    }

    /// Stops the thread once what was queued before is written, and copies the log back into
    /// the database file; later writes fail.
    pub(crate) async fn stop(&self, until: Instant) {
        // Fails only when the thread has ended already; waits while the queue is full, as long
        // as a close waits for the thread.
        let _ = tokio::time::timeout_at(until, self.queue.send(Message::Stop)).await;
        self.thread.join(until).await;
    }

    /// Writes `row` with whatever other rows are waiting; returns after the commit.
    pub(crate) async fn insert_token(&self, row: StoredToken) -> Result<TokenWrite, RepoError> {
        // Encoded here, on the caller's thread: the writer thread only binds and steps.
        let (tenant_id, month) = (row.tenant_id, month_of(row.created_at));
        let values = tokenvault_persistence_shared::rows::token::to_sqlite(&row)?;
        let (reply, answer) = oneshot::channel();
        let pending = Pending {
            values,
            tenant_id,
            month,
            reply,
        };
        self.queue
            .send(Message::Token(pending))
            .await
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    /// Runs `job` on the writer's connection, after the writes queued before it.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce(&Connection) -> Result<T, RepoError> + Send + 'static,
    ) -> Result<T, RepoError> {
        let (reply, answer) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            // A caller that left before its turn (a dropped flush) writes nothing, as a dropped
            // transaction on the pool would not have.
            if reply.is_closed() {
                return;
            }
            let _ = reply.send(job(conn));
        });
        self.queue
            .send(Message::Job(job))
            .await
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    /// Queues `job` unless the queue is full; does not wait for it.
    pub(crate) fn try_queue(&self, job: Job) -> bool {
        self.queue.try_send(Message::Job(job)).is_ok()
    }
}

fn open(file: &OnDisk) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        &file.path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Per connection, as the pool sets them (`connect`): foreign keys hold, and a commit is on
    // disk before it is acknowledged.
    conn.pragma_update(None, "foreign_keys", true)?;
    let synchronous = if file.synchronous_normal {
        "NORMAL"
    } else {
        "FULL"
    };
    conn.pragma_update(None, "synchronous", synchronous)?;
    conn.pragma_update(None, "cache_size", -CACHE_KIB)?;
    conn.pragma_update(None, "wal_autocheckpoint", AUTOCHECKPOINT)?;
    Ok(conn)
}

fn run(conn: &Connection, mut rx: mpsc::Receiver<Message>) {
    let mut messages = Vec::with_capacity(MAX_BATCH);
    let mut rows = Vec::with_capacity(MAX_BATCH);
    while rx.blocking_recv_many(&mut messages, MAX_BATCH) > 0 {
        // The rows first, in one group; then the jobs, in the order they came.
        let mut jobs = Vec::new();
        for message in messages.drain(..) {
            match message {
                Message::Token(pending) => rows.push(pending),
                Message::Job(job) => jobs.push(job),
                // What is queued still comes, then the loop ends.
                Message::Stop => rx.close(),
            }
        }
        if !rows.is_empty() {
            guarded(conn, || group_commit::write(conn, &mut rows));
            // After a panic the callers left in `rows` learn it from their dropped reply.
            rows.clear();
        }
        for job in jobs {
            let started = std::time::Instant::now();
            guarded(conn, || job(conn));
            tracing::debug!(elapsed_us = started.elapsed().as_micros(), "writer job");
        }
    }
}

/// How long the last checkpoint waits for other connections' readers and writers.
const LAST_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// At the writer's end: copies the whole log back into the database file and empties it, so a
/// stopped server leaves one self-contained file (as a backup or `sqlite3` reads it) and the
/// next start has no log to go through. Readers still open may keep it from finishing: the log
/// then stays, as after a crash, and is no less durable. It waits for them [`LAST_WAIT`] at
/// most, since it holds the write lock meanwhile: a command (`tokenvault tenants list`) closing
/// beside a running server must not stall the server's writes.
fn truncate_log(conn: &Connection) {
    if let Err(e) = conn.busy_timeout(LAST_WAIT) {
        tracing::warn!(error = %e, "the last SQLite checkpoint's wait could not be set");
    }
    let done = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| {
        row.get::<_, i64>(0)
    });
    match done {
        Ok(0) => tracing::debug!("the SQLite log is copied back"),
        Ok(_) => tracing::info!("the SQLite log could not be copied back at stop (readers)"),
        Err(e) => tracing::warn!(error = %e, "the last SQLite checkpoint failed"),
    }
}

/// Runs `write`; should it panic, or return with a transaction still open, ends that
/// transaction and carries on, so one bad write does not stop every later one (a panicked
/// write's callers get an error from their dropped reply).
fn guarded(conn: &Connection, write: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(write)).is_err() {
        tracing::error!("a write on the SQLite writer panicked");
    }
    if !conn.is_autocommit() {
        tracing::error!("a write on the SQLite writer left a transaction open; rolled back");
        let _ = conn.execute_batch("ROLLBACK");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tx::{backend, transaction};

    fn scratch() -> (tempdir::Dir, Writer) {
        let dir = tempdir::Dir::new();
        let path = dir.0.join("writer.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (v INTEGER)")
            .unwrap();
        let writer = Writer::start(&OnDisk {
            path,
            synchronous_normal: false,
        })
        .unwrap();
        (dir, writer)
    }

    mod tempdir {
        /// A directory removed on drop.
        pub(super) struct Dir(pub(super) std::path::PathBuf);

        impl Dir {
            pub(super) fn new() -> Self {
                let dir = std::env::temp_dir().join(format!("tv-writer-{}", uuid::Uuid::new_v4()));
                std::fs::create_dir_all(&dir).unwrap();
                Self(dir)
            }
        }

        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    /// Writes one more row in a transaction of its own: the writer is not stuck in an earlier
    /// one. The rows then in the table.
    async fn write_one_more(writer: &Writer) -> i64 {
        writer
            .run(|conn| {
                transaction(conn, |conn| conn.execute("INSERT INTO t VALUES (2)", []))
                    .map_err(backend)?;
                count(conn)
            })
            .await
            .unwrap()
    }

    fn count(conn: &Connection) -> Result<i64, RepoError> {
        conn.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .map_err(backend)
    }

    #[tokio::test]
    async fn a_panicking_write_fails_alone_and_leaves_no_transaction_open() {
        let (_dir, writer) = scratch();
        let panicked = writer
            .run(|conn| -> Result<(), RepoError> {
                conn.execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES (1)")
                    .unwrap();
                panic!("a bug in a write");
            })
            .await;
        assert!(panicked.is_err());
        // The writer carries on, and the panicked write's row was rolled back.
        assert_eq!(write_one_more(&writer).await, 1);
    }

    /// A flush dropped while its append waits in the queue writes nothing (the audit log's
    /// settling of dropped appends relies on it).
    #[tokio::test]
    async fn a_job_whose_caller_left_before_its_turn_writes_nothing() {
        let (_dir, writer) = scratch();
        let (release, held) = std::sync::mpsc::channel::<()>();
        assert!(writer.try_queue(Box::new(move |_| {
            let _ = held.recv();
        })));
        let left = writer.run(|conn| {
            conn.execute("INSERT INTO t VALUES (1)", [])
                .map_err(backend)
        });
        // Queued behind the held job, then dropped.
        let waited = tokio::time::timeout(std::time::Duration::from_millis(50), left).await;
        assert!(waited.is_err());
        release.send(()).unwrap();
        assert_eq!(writer.run(count).await.unwrap(), 0);
    }

    /// A write that returns with its transaction open does not leave the writer stuck in it.
    #[tokio::test]
    async fn a_transaction_left_open_is_rolled_back() {
        let (_dir, writer) = scratch();
        writer
            .run(|conn| {
                conn.execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES (1)")
                    .map_err(backend)
            })
            .await
            .unwrap();
        assert_eq!(write_one_more(&writer).await, 1);
    }

    #[tokio::test]
    async fn a_failed_transaction_is_rolled_back() {
        let (_dir, writer) = scratch();
        let failed = writer
            .run(|conn| {
                transaction(conn, |conn| {
                    conn.execute("INSERT INTO t VALUES (1)", [])?;
                    conn.execute("INSERT INTO missing VALUES (1)", [])
                })
                .map_err(backend)
            })
            .await;
        assert!(failed.is_err());
        assert_eq!(writer.run(count).await.unwrap(), 0);
    }
}
