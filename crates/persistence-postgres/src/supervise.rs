//! The threads that own a PostgreSQL connection of their own (the group writer, the audit
//! appender) run their loop here: should it panic, the thread starts it again on a fresh
//! runtime, so one bug in one write does not stop every later one. What was in hand fails (an
//! append, or a whole group of token inserts): its callers learn it from their dropped replies.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use sea_orm::sqlx;
use sea_orm::sqlx::Connection as _;
use sea_orm::sqlx::postgres::{PgConnectOptions, PgConnection, PgDatabaseError, PgSeverity};
use tokio::runtime::{Builder, Runtime};
use tokio::sync::Notify;
use tokio::sync::mpsc::UnboundedReceiver;

use tokenvault_persistence_shared::threads::Joinable;

/// A connection of such a thread idle longer is pinged before its next write: a server
/// restart or an administrator may have closed it.
pub(crate) const CHECK_AFTER_IDLE: Duration = Duration::from_secs(1);

/// The longest a connect, a ping or one write of such a thread may take: a database that stops
/// answering (dropped packets) must not hold the thread, and every caller queued behind it,
/// forever.
pub(crate) const DEADLINE: Duration = Duration::from_secs(30);

/// How long a statement of such a thread waits for a lock. Every tenant's writes queue behind
/// the thread, so one tenant's locked row (the last step of its delete, an administrator's open
/// transaction) must not hold them: the write that waited fails alone, and its caller writes it
/// again later (the audit) or answers an error (a token insert).
const LOCK_TIMEOUT: &str = "SET lock_timeout = '2s'";

/// On Citus a session's [`LOCK_TIMEOUT`] holds on the coordinator only, while a write's row
/// locks (its foreign key's on the tenant's copy of `tenants`) are taken on a worker: measured
/// on Citus 13.2, an insert behind a tenant's delete waited there until the delete ended. A
/// transaction's `SET LOCAL` goes along to every worker it touches once it says so first;
/// both are set per transaction, so that a pooler between (PgBouncer) keeps nothing of a
/// session. For such a thread's connection ([`begin_on_citus`]) and the server's pool alike.
pub(crate) const CITUS_LOCK_TIMEOUT: [&str; 2] = [
    "SET LOCAL citus.propagate_set_commands = 'local'",
    "SET LOCAL lock_timeout = '2s'",
];

/// A connection of such a thread, every one it opens (a reconnection's included), with
/// [`LOCK_TIMEOUT`] set by a statement: a start-up option would be refused by poolers such as
/// PgBouncer, which the server's own pool goes through.
pub(crate) async fn connect(options: &PgConnectOptions) -> Result<PgConnection, sqlx::Error> {
    let mut conn = PgConnection::connect_with(options).await?;
    sqlx::query(LOCK_TIMEOUT).execute(&mut conn).await?;
    Ok(conn)
}

/// On Citus, begins a transaction whose statements wait for a lock on the workers no longer
/// than [`LOCK_TIMEOUT`] lets them on the coordinator ([`CITUS_LOCK_TIMEOUT`]). Should a
/// setting fail, the transaction is left open: the caller rolls it back or drops the
/// connection.
pub(crate) async fn begin_on_citus(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    sqlx::raw_sql("BEGIN").execute(&mut *conn).await?;
    for set in CITUS_LOCK_TIMEOUT {
        sqlx::raw_sql(set).execute(&mut *conn).await?;
    }
    Ok(())
}

pub(crate) fn timed_out() -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "the PostgreSQL connection did not answer in time",
    ))
}

/// `step` within [`DEADLINE`].
pub(crate) async fn within<T>(
    step: impl Future<Output = Result<T, sqlx::Error>>,
) -> Result<T, sqlx::Error> {
    tokio::time::timeout(DEADLINE, step)
        .await
        .unwrap_or_else(|_| Err(timed_out()))
}

/// A current-thread runtime for such a thread.
fn runtime() -> std::io::Result<Runtime> {
    Builder::new_current_thread().enable_all().build()
}

/// Spawns the thread `name`, which runs `body` on a runtime of its own until it returns, and
/// on a fresh runtime each time it panics; the error when the thread or its first runtime
/// cannot be made.
pub(crate) fn spawn(
    name: &'static str,
    mut body: impl FnMut(&Runtime, &Notify) + Send + 'static,
) -> std::io::Result<Supervised> {
    let stop = Arc::new(Notify::new());
    let stopping = stop.clone();
    // The first runtime is made on the thread itself and its outcome sent back: one made here
    // and dropped when the spawn fails would be dropped inside the caller's runtime (a panic).
    let (started, outcome) = std::sync::mpsc::channel();
    let thread = Joinable::spawn(name, move || {
        let mut current = match runtime() {
            Ok(rt) => {
                let _ = started.send(Ok(()));
                Some(rt)
            }
            Err(e) => {
                let _ = started.send(Err(e));
                return;
            }
        };
        loop {
            let rt = match current.take().map_or_else(runtime, Ok) {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!(thread = %name, error = %e, "no runtime to start again on; the thread ends");
                    return;
                }
            };
            let Err(panic) = catch_unwind(AssertUnwindSafe(|| body(&rt, &stopping))) else {
                return;
            };
            let message = panic
                .downcast_ref::<&str>()
                .map(|m| (*m).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(thread = %name, panic = %message, "a PostgreSQL writer thread panicked; it starts again");
        }
    })?;
    outcome
        .recv()
        .map_err(|_| std::io::Error::other("the thread ended before it started"))??;
    Ok(Supervised { stop, thread })
}

/// A thread of [`spawn`], which its owner stops.
#[derive(Debug)]
pub(crate) struct Supervised {
    stop: Arc<Notify>,
    thread: Joinable,
}

impl Supervised {
    /// Tells the thread's loop to stop (its queue ends after what it holds, [`next`]) and
    /// waits for the thread until `until`.
    pub(crate) async fn stop(&self, until: tokio::time::Instant) {
        self.stop.notify_one();
        self.thread.join(until).await;
    }
}

/// The next message of such a thread's `queue`. Once `stop` is notified the queue takes no
/// new message and what it holds is still handed out, then `None`: the thread ends after the
/// work queued before its owner closed the database (`threads.rs`).
pub(crate) async fn next<T>(queue: &mut UnboundedReceiver<T>, stop: &Notify) -> Option<T> {
    // The stop first: a queue that is never empty must not keep it unseen. Nothing is lost
    // by it, the closed queue still hands out what it holds.
    tokio::select! {
        biased;
        () = stop.notified() => {
            queue.close();
            queue.recv().await
        }
        message = queue.recv() => message,
    }
}

/// Whether the connection is still in step after `e`: the database answered the statement (a
/// constraint, a bad value), as opposed to the connection or the protocol failing. A `FATAL`
/// or `PANIC` answer ends the session (`57P01` when an administrator or a shutdown closed it).
pub(crate) fn answered(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => db
            .try_downcast_ref::<PgDatabaseError>()
            .is_some_and(|pg| !matches!(pg.severity(), PgSeverity::Fatal | PgSeverity::Panic)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn a_body_that_panics_is_run_again_until_it_returns() {
        let runs = Arc::new(AtomicUsize::new(0));
        let (done, finished) = std::sync::mpsc::channel();
        let counted = runs.clone();
        spawn("supervised-test", move |rt, _stop| {
            let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
            // The runtime works on every run, the ones after a panic included.
            assert_eq!(rt.block_on(async { n }), n);
            assert!(n >= 3, "a bug on run {n}");
            done.send(n).unwrap();
        })
        .unwrap();
        let n = finished
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap();
        assert_eq!(n, 3);
        assert_eq!(runs.load(Ordering::SeqCst), 3);
    }
}
