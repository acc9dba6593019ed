//! The engine's threads (the SQLite writer and checkpointer, PostgreSQL's group writer and
//! audit appender) as their owner stops them: [`crate::Database::close`] asks each to stop —
//! a queue then takes nothing new and is worked off, a timer loop ends at its next turn — and
//! waits here until the thread has ended, so the process exits only after the last write is
//! committed and a SQLite log is copied back.

use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// The longest a close waits for one thread: longer than a write of a PostgreSQL thread may
/// take (`supervise::DEADLINE`, 30 s) and than SQLite waits for a lock (10 s), so a thread
/// still running past it is stuck, and the close goes on without it (logged).
const STOP_WAIT: Duration = Duration::from_secs(35);

/// A running thread, joined once.
#[derive(Debug)]
pub(crate) struct Joinable {
    name: &'static str,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl Joinable {
    pub(crate) fn new(name: &'static str, handle: JoinHandle<()>) -> Self {
        Self {
            name,
            handle: Mutex::new(Some(handle)),
        }
    }

    /// Waits until the thread has ended (it must have been asked to), at most [`STOP_WAIT`];
    /// at once when it was joined before.
    pub(crate) async fn join(&self) {
        let handle = self
            .handle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(handle) = handle else {
            return;
        };
        let joined = tokio::task::spawn_blocking(move || handle.join());
        match tokio::time::timeout(STOP_WAIT, joined).await {
            Ok(Ok(Ok(()))) => tracing::debug!(thread = self.name, "stopped"),
            Ok(Ok(Err(_))) => tracing::error!(thread = self.name, "ended in a panic"),
            Ok(Err(e)) => tracing::warn!(thread = self.name, error = %e, "could not be joined"),
            Err(_) => tracing::warn!(
                thread = self.name,
                "still running after {} s; the close goes on without it",
                STOP_WAIT.as_secs()
            ),
        }
    }
}
