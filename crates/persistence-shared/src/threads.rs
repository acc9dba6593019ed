//! The engine's threads (the SQLite writer and checkpointer, PostgreSQL's group writer and
//! audit appender) as their owner stops them: [`crate::Database::close`] asks each to stop —
//! a queue then takes nothing new and is worked off, a timer loop ends at its next turn — and
//! waits here until the thread has ended, so the process exits only after the last write is
//! committed and a SQLite log is copied back.
//!
//! The wait is on a signal the thread drops as it ends, never on `JoinHandle::join` in a
//! blocking task: a runtime waits for its blocking tasks when it shuts down, so a thread stuck
//! past the wait would still have held the process.

use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// The longest a whole close waits (the pool and every thread together): longer than one
/// write of a PostgreSQL thread may take (`supervise::DEADLINE`, 30 s) and than SQLite waits
/// for a lock (10 s), shorter than the 40 s a container manager gives a stop (`compose.yaml`).
/// A thread still running past it is stuck on a database that does not answer, and the close
/// goes on without it (logged); the process may then exit with that thread's queued work
/// unwritten (never acknowledged).
pub(crate) const STOP_WAIT: Duration = Duration::from_secs(35);

/// A running thread, waited for by any number of closes.
#[derive(Debug)]
pub struct Joinable {
    name: &'static str,
    ended: watch::Receiver<()>,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl Joinable {
    /// Spawns the thread `name` running `body`.
    pub fn spawn(
        name: &'static str,
        body: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<Self> {
        let (running, ended) = watch::channel(());
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                // Dropped however the thread ends, a panic included: that ends the wait.
                let _running = running;
                body();
            })?;
        Ok(Self {
            name,
            ended,
            handle: Mutex::new(Some(handle)),
        })
    }

    /// Waits until the thread has ended (it must have been asked to), at most until `until`
    /// (the close's deadline, `STOP_WAIT` after it began).
    pub async fn join(&self, until: Instant) {
        let mut ended = self.ended.clone();
        // `Err` once the thread's sender is dropped.
        let waited =
            tokio::time::timeout_at(until, async { while ended.changed().await.is_ok() {} }).await;
        if waited.is_err() {
            tracing::warn!(
                thread = self.name,
                "still running at the close's deadline; the close goes on without it"
            );
            return;
        }
        let handle = self
            .handle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        // Ended: joining only collects how (at once).
        if let Some(handle) = handle {
            if handle.join().is_ok() {
                tracing::debug!(thread = self.name, "stopped");
            } else {
                tracing::error!(thread = self.name, "ended in a panic");
            }
        }
    }
}
