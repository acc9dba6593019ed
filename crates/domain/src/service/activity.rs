//! Token activity waiting to be written: what reads and uses record (`ActivityTrail`), and
//! the batch a flush takes out and puts back if it is not written (`service/usage.rs` flushes).

use std::collections::HashSet;
use std::sync::Mutex;

use uuid::Uuid;

use crate::ports::ActivityTrail;

/// Activity entries remembered as written, to skip re-writing them within a month.
const MAX_REMEMBERED_ACTIVITY: usize = 1_000_000;

/// Activity entries waiting at most: past this (the database has been unreachable for long
/// under load), new entries are dropped and counted, and the next flush reports the count as
/// an error, as the audit buffer does; the memory they take stays bounded.
#[cfg(not(test))]
const MAX_PENDING_ACTIVITY: usize = 1_000_000;
#[cfg(test)]
const MAX_PENDING_ACTIVITY: usize = 3;

/// Tokens read or used, per (tenant, month, token), waiting to be written in one batch.
#[derive(Default)]
pub struct ActivityBuffer {
    pending: Mutex<HashSet<(Uuid, String, String)>>,
    flushed: Mutex<HashSet<(Uuid, String, String)>>,
    /// Entries dropped because `pending` was full, not yet reported.
    dropped: std::sync::atomic::AtomicU64,
    /// Held for a whole flush: one flush at a time, so a report's flush waits for the one in
    /// flight and then reads only after every activity recorded before it was written.
    flushing: futures_util::lock::Mutex<()>,
}

/// A flush's batch until it is written: dropped with anything in it (the write failed, or the
/// flush's future was dropped at an `await`), it puts the batch back in the buffer, before the
/// flush lock it holds is released.
pub(super) struct Unwritten<'a> {
    buffer: &'a ActivityBuffer,
    batch: Vec<(Uuid, String, String)>,
    _one_at_a_time: futures_util::lock::MutexGuard<'a, ()>,
}

impl Drop for Unwritten<'_> {
    fn drop(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        self.buffer
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(self.batch.drain(..));
    }
}

impl std::fmt::Debug for ActivityBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActivityBuffer").finish_non_exhaustive()
    }
}

impl ActivityTrail for ActivityBuffer {
    fn record(&self, tenant_id: Uuid, month: &str, ids: &mut dyn Iterator<Item = &str>) {
        let flushed = self
            .flushed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut pending = self
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for id in ids {
            let entry = (tenant_id, month.to_owned(), id.to_string());
            if flushed.contains(&entry) || pending.contains(&entry) {
                continue;
            }
            if pending.len() >= MAX_PENDING_ACTIVITY {
                self.dropped
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                continue;
            }
            pending.insert(entry);
        }
    }
}

impl ActivityBuffer {
    /// The batch of a flush, which runs alone: a caller that finds a flush in flight waits for
    /// it. `None` when nothing waits. Entries dropped because the buffer was full are reported
    /// here, once.
    pub(super) async fn take(&self) -> Option<Unwritten<'_>> {
        let one_at_a_time = self.flushing.lock().await;
        let dropped = self.dropped.swap(0, std::sync::atomic::Ordering::Relaxed);
        if dropped > 0 {
            tracing::error!(
                dropped,
                "token activity dropped: it could not be written for long; the usage report undercounts"
            );
        }
        let batch: Vec<(Uuid, String, String)> = {
            let mut pending = self
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            pending.drain().collect()
        };
        if batch.is_empty() {
            return None;
        }
        Some(Unwritten {
            buffer: self,
            batch,
            _one_at_a_time: one_at_a_time,
        })
    }
}

impl Unwritten<'_> {
    /// The entries to write.
    pub(super) fn batch(&self) -> &[(Uuid, String, String)] {
        &self.batch
    }

    /// The batch was written: it is remembered for the rest of `month` (the current one), so
    /// the same entries are not written again. Returns how many there were.
    pub(super) fn written(mut self, month: &str) -> usize {
        let batch = std::mem::take(&mut self.batch);
        let mut flushed = self
            .buffer
            .flushed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        flushed.retain(|(_, m, _)| m == month);
        if flushed.len() > MAX_REMEMBERED_ACTIVITY {
            // Only an optimisation (upserts are idempotent): bound the memory it takes.
            flushed.clear();
        }
        let n = batch.len();
        flushed.extend(batch);
        n
    }
}
