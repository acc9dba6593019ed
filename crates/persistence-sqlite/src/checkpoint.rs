//! WAL checkpoints on SQLite, off the writers' path.
//!
//! In WAL mode every commit appends pages to the `-wal` file, and a checkpoint copies them back
//! into the database file so the log can start over. SQLite runs that checkpoint itself in the
//! connection whose commit pushed the log past 1,000 pages: under a tokenize load that is the
//! writer thread (`sqlite/writer.rs`), which then copies a thousand pages and syncs the database file
//! while every waiting insert queues behind it (docs/performance-journal.md).
//!
//! Here a thread per database file does it instead, on its own connection, in two steps:
//! every [`EVERY`] a passive checkpoint copies what the log holds without blocking anyone;
//! when the log has grown past [`RESTART_AT`] pages, a last passive checkpoint is queued on the
//! writer thread, between two of its transactions, and copies the few pages written meanwhile,
//! so the log is fully copied and the next write starts it over. (A passive checkpoint alone
//! never catches up with a steady stream of writes, and the log would grow without bound.) The
//! writer keeps an automatic checkpoint of its own at a larger size, should this thread stop.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Weak;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::writer::Writer;
use tokenvault_persistence_shared::threads::Joinable;

/// How often the log is copied back.
const EVERY: Duration = Duration::from_millis(20);
/// Log pages at which the log is finished on the writer thread and starts over.
const RESTART_AT: i64 = 1_000;

/// The running checkpoint thread of a file.
#[derive(Debug)]
pub(crate) struct Checkpointer {
    stop: Arc<AtomicBool>,
    thread: Joinable,
}

impl Checkpointer {
    /// Ends the thread at its next turn (within [`EVERY`]) and waits for it.
    pub(crate) async fn stop(&self, until: tokio::time::Instant) {
        self.stop.store(true, Ordering::Release);
        self.thread.join(until).await;
    }
}

/// Starts the checkpoint thread of `path`, which ends when stopped or once the file's `writer`
/// is dropped. The one thread whose failure to start does not fail `connect`: the writer's own
/// `wal_autocheckpoint` then keeps the log bounded (logged).
pub(crate) fn start(path: PathBuf, writer: Weak<Writer>) -> Option<Checkpointer> {
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    let spawned = Joinable::spawn("sqlite-checkpoint", move || run(&path, &writer, &stopping));
    match spawned {
        Ok(thread) => Some(Checkpointer { stop, thread }),
        Err(e) => {
            tracing::warn!(error = %e, "no checkpoint thread: SQLite checkpoints in the writers");
            None
        }
    }
}

fn run(path: &Path, writer: &Weak<Writer>, stop: &AtomicBool) {
    let conn = match Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) {
        Ok(conn) => conn,
        Err(e) => {
            tracing::warn!(error = %e, "no checkpoint thread: SQLite checkpoints in the writers");
            return;
        }
    };
    let mut failing = false;
    // A last pass queued on the writer and not run yet: no second one meanwhile.
    let queued = Arc::new(AtomicBool::new(false));
    // The log's size at the last pass queued: an idle log stays that size until the next write
    // starts it over, and needs no further pass.
    let mut last_queued = None;
    loop {
        std::thread::sleep(EVERY);
        if stop.load(Ordering::Acquire) {
            return;
        }
        let Some(writer) = writer.upgrade() else {
            return;
        };
        match passive(&conn) {
            Ok(log) => {
                failing = false;
                if log >= RESTART_AT
                    && last_queued != Some(log)
                    && !queued.swap(true, Ordering::AcqRel)
                {
                    last_queued = Some(log);
                    let done = Arc::clone(&queued);
                    let job = Box::new(move |writer: &Connection| {
                        if let Err(e) = passive(writer) {
                            tracing::warn!(error = %e, "checkpoint on the writer failed");
                        }
                        done.store(false, Ordering::Release);
                    });
                    if !writer.try_queue(job) {
                        queued.store(false, Ordering::Release);
                    }
                }
            }
            // Said once per run of failures, not every 20 ms.
            Err(e) if !failing => {
                failing = true;
                tracing::warn!(error = %e, "background checkpoint failed");
            }
            Err(_) => {}
        }
    }
}

/// A passive checkpoint: copies what it can without waiting for anyone; the log's size in pages.
fn passive(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(1))
}
