//! Monthly active tokens and the usage report (docs/decisions.md §10).

use std::collections::HashSet;
use std::sync::Mutex;

use uuid::Uuid;

use super::Usage;
use crate::auth::Principal;
use crate::error::Error;
use crate::permission::Permission;
use crate::ports::{ActivityTrail, TypeCount, month_of};

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
struct Unwritten<'a> {
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

/// The live usage report.
#[derive(Clone, Debug)]
pub struct UsageReport {
    /// Live tokens per type.
    pub by_type: Vec<TypeCount>,
    /// Distinct tokens active this UTC month.
    pub monthly_active_tokens: u64,
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

impl Usage {
    /// Background job (and the usage report): writes buffered activity in one batch. Flushes
    /// run one at a time: a caller that finds a flush in flight waits for it, so on return
    /// every activity recorded before the call has been written. A failed flush, or one
    /// dropped before it finished (actix drops a report whose client left), puts its batch
    /// back (`Unwritten`); writing it twice is harmless (upserts).
    pub async fn flush_activity(&self) -> Result<usize, Error> {
        let one_at_a_time = self.activity.flushing.lock().await;
        let dropped = self
            .activity
            .dropped
            .swap(0, std::sync::atomic::Ordering::Relaxed);
        if dropped > 0 {
            tracing::error!(
                dropped,
                "token activity dropped: it could not be written for long; the usage report undercounts"
            );
        }
        let batch: Vec<(Uuid, String, String)> = {
            let mut pending = self
                .activity
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            pending.drain().collect()
        };
        if batch.is_empty() {
            return Ok(0);
        }
        let mut unwritten = Unwritten {
            buffer: &self.activity,
            batch,
            _one_at_a_time: one_at_a_time,
        };
        self.store.record_activity(&unwritten.batch).await?;
        let batch = std::mem::take(&mut unwritten.batch);
        let month = month_of(self.clock.now());
        let mut flushed = self
            .activity
            .flushed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        flushed.retain(|(_, m, _)| *m == month);
        if flushed.len() > MAX_REMEMBERED_ACTIVITY {
            // Only an optimisation (upserts are idempotent): bound the memory it takes.
            flushed.clear();
        }
        let n = batch.len();
        flushed.extend(batch);
        Ok(n)
    }

    /// `GET /tenants/self/reports/usage` (docs/decisions.md §10).
    pub async fn usage_report(&self, caller: &Principal) -> Result<UsageReport, Error> {
        caller.require(Permission::ReportRead)?;
        if let Err(e) = self.flush_activity().await {
            tracing::warn!(error = %e, "activity flush before the report failed");
        }
        let now = self.clock.now();
        let by_type = self.store.count_by_type(caller.tenant_id, now).await?;
        let monthly_active_tokens = self
            .store
            .count_active(caller.tenant_id, &month_of(now))
            .await?;
        Ok(UsageReport {
            by_type,
            monthly_active_tokens,
        })
    }
}

#[cfg(test)]
mod tests {
    use time::OffsetDateTime;
    use time::macros::datetime;

    use super::*;

    #[test]
    pub(super) fn months_are_utc_calendar_months() {
        let t = OffsetDateTime::from_unix_timestamp(1_801_000_000).unwrap();
        assert_eq!(month_of(t), "2027-01");
        assert_eq!(month_of(datetime!(2026-11-30 23:30 -01:00)), "2026-12");
        assert_eq!(month_of(datetime!(2026-12-01 00:30 +01:00)), "2026-11");
        assert_eq!(month_of(datetime!(0999-01-01 00:00 UTC)), "0999-01");
    }
}
