//! The audit log (docs/decisions.md §11). Use cases record what they did after it succeeded;
//! events wait in memory and a background job appends them to each tenant's hash chain in
//! batches (every 200 ms, at shutdown, and before `GET /logs` reads), so recording costs a
//! request no database round trip.

use uuid::Uuid;

use super::AuditLog;
use crate::audit::{StoredEvent, chain_input};
use crate::error::Error;

impl AuditLog {
    /// How many events are in memory and not yet written, all tenants (`GET /metrics`):
    /// those waiting for a flush and those the flush in progress has not written yet.
    pub fn audit_waiting(&self) -> usize {
        // Read under the lock the flush takes its events with (and counts them in flight).
        self.audit_buffer.pending().all()
    }

    /// Sets the high-water mark: a tenant's events in memory from which its requests wait for
    /// room (`room.rs`; 0: every request waits, and is refused after the wait unless the
    /// tenant's appends fail).
    pub fn set_high_water(&self, events: usize) {
        self.audit_buffer.pending().high_water = events;
    }

    /// How many requests were refused because their tenant's log stayed behind
    /// (`GET /metrics`).
    pub fn audit_refusals(&self) -> u64 {
        self.audit_buffer
            .refused
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many events wait for the next flush, leaving out those of tenants whose chain is
    /// blocked (they cannot be written; counting them would have the flusher run at once,
    /// again and again).
    pub fn audit_backlog(&self) -> usize {
        let blocked = self.audit_buffer.blocked();
        let pending = self.audit_buffer.pending();
        let waiting_blocked: usize = blocked
            .keys()
            .filter_map(|t| pending.index.get(t).map(|&i| pending.tenants[i].1.len()))
            .sum();
        pending.len - waiting_blocked
    }

    fn audit_mac(
        &self,
        tenant_id: Uuid,
        previous: &str,
        seq: i64,
        event: &StoredEvent,
    ) -> Result<String, Error> {
        self.cipher
            .fingerprint(tenant_id, &chain_input(previous, seq, event))
            .map_err(|_| Error::internal("audit MAC failed"))
    }
}

pub(crate) mod buffer;
pub(crate) mod flush;
mod log;
pub(crate) mod room;
