//! Audit events in memory: recorded by the use cases (`AuditTrail`), waiting per tenant within
//! their bounds, taken and put back by a flush (`flush.rs`), waited for by requests
//! (`room.rs`).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Mutex, MutexGuard};

use uuid::Uuid;

use crate::audit::AuditEvent;
use crate::ports::AuditTrail;

/// The default of a tenant's events in memory from which its requests wait (about 6 MB of
/// events; `AuditLog::set_high_water`): about two flushes' worth at the fastest rate measured
/// (a children-page load, ~50,000 events a second), so a log that keeps up never makes a
/// request wait (`room.rs`).
pub const HIGH_WATER: usize = 20_000;

/// The most events kept waiting (about 300 MB) while the database refuses them.
pub(super) const MAX_PENDING: usize = 1_000_000;

/// The most events of one tenant kept waiting: beyond, that tenant's new events are dropped and
/// counted, and every flush reports the count as an error naming the tenant. One tenant's
/// flood (or its log that cannot be written) never drops another tenant's events.
pub(super) const MAX_PENDING_PER_TENANT: usize = 100_000;

/// One tenant's events, in the order recorded.
pub(super) type TenantEvents = (Uuid, Vec<AuditEvent>);

/// Events waiting to be written, per tenant in the order recorded, each tenant within its own
/// bound.
pub(in crate::service) struct Pending {
    /// Tenants in the order they first had an event waiting, each with its events.
    pub(super) tenants: Vec<TenantEvents>,
    /// Where each tenant is in `tenants`.
    pub(super) index: HashMap<Uuid, usize>,
    /// Events waiting, all tenants.
    pub(super) len: usize,
    /// Events dropped per tenant, not yet reported.
    pub(super) dropped: HashMap<Uuid, u64>,
    /// The most events of one tenant.
    pub(super) per_tenant: usize,
    /// The most events of all tenants.
    pub(super) total: usize,
    /// Per tenant, the events the flush in progress took and has not written yet.
    pub(super) in_flight: HashMap<Uuid, usize>,
    /// A tenant's events in memory from which its requests wait for room (`room.rs`).
    pub(super) high_water: usize,
    /// Per tenant, the requests waiting for room.
    pub(super) waiters: HashMap<Uuid, usize>,
}

impl Default for Pending {
    fn default() -> Self {
        Self {
            tenants: Vec::new(),
            index: HashMap::new(),
            len: 0,
            dropped: HashMap::new(),
            per_tenant: MAX_PENDING_PER_TENANT,
            total: MAX_PENDING,
            in_flight: HashMap::new(),
            high_water: HIGH_WATER,
            waiters: HashMap::new(),
        }
    }
}

impl Pending {
    /// Other bounds (tests).
    #[cfg(test)]
    pub(in crate::service) fn limit(&mut self, per_tenant: usize, total: usize) {
        self.per_tenant = per_tenant;
        self.total = total;
    }

    pub(super) fn events_of(&mut self, tenant_id: Uuid) -> &mut Vec<AuditEvent> {
        let i = *self.index.entry(tenant_id).or_insert_with(|| {
            self.tenants.push((tenant_id, Vec::new()));
            self.tenants.len() - 1
        });
        &mut self.tenants[i].1
    }

    /// Adds `events` (all of `tenant_id`), dropping and counting what does not fit: beyond
    /// its own bound a tenant's new events are dropped; with the whole buffer full, an event
    /// of a tenant holding fewer than the tenant holding the most takes the place of that
    /// one's newest (dropped and counted against it), else it is dropped itself.
    pub(super) fn admit(&mut self, tenant_id: Uuid, events: Vec<AuditEvent>) {
        let per_tenant = self.per_tenant;
        let mut dropped = 0_u64;
        for event in events {
            let mine = self.events_of(tenant_id).len();
            if mine >= per_tenant {
                dropped += 1;
                continue;
            }
            if self.len >= self.total {
                // The tenant holding the most (the first of them, in recording order).
                let fullest = self
                    .tenants
                    .iter_mut()
                    .filter(|(_, events)| !events.is_empty())
                    .rev()
                    .max_by_key(|(_, events)| events.len());
                match fullest {
                    Some((other, theirs)) if *other != tenant_id && theirs.len() > mine + 1 => {
                        theirs.pop();
                        let other = *other;
                        *self.dropped.entry(other).or_insert(0) += 1;
                        self.len -= 1;
                    }
                    _ => {
                        dropped += 1;
                        continue;
                    }
                }
            }
            self.len += 1;
            self.events_of(tenant_id).push(event);
        }
        if dropped > 0 {
            *self.dropped.entry(tenant_id).or_insert(0) += dropped;
        }
    }

    /// Puts `events` back ahead of those of their tenants recorded since they were taken,
    /// bounds aside (they were admitted once).
    pub(super) fn requeue(&mut self, events: Vec<AuditEvent>) {
        let mut by_tenant: Vec<(Uuid, Vec<AuditEvent>)> = Vec::new();
        for event in events {
            match by_tenant.iter_mut().find(|(t, _)| *t == event.tenant_id) {
                Some((_, mine)) => mine.push(event),
                None => by_tenant.push((event.tenant_id, vec![event])),
            }
        }
        for (tenant_id, back) in by_tenant {
            self.len += back.len();
            let mine = self.events_of(tenant_id);
            let later = std::mem::replace(mine, back);
            mine.extend(later);
        }
    }

    /// Everything waiting, per tenant in order, and the drops not yet reported; what is taken
    /// counts as in flight until [`Self::settled`].
    pub(super) fn take(&mut self) -> (Vec<TenantEvents>, HashMap<Uuid, u64>) {
        self.index.clear();
        self.len = 0;
        self.tenants.retain(|(_, events)| !events.is_empty());
        self.in_flight = self
            .tenants
            .iter()
            .map(|(tenant_id, events)| (*tenant_id, events.len()))
            .collect();
        (
            std::mem::take(&mut self.tenants),
            std::mem::take(&mut self.dropped),
        )
    }

    /// `n` of `tenant_id`'s events in flight are written, or were put back, or dropped.
    pub(super) fn settled(&mut self, tenant_id: Uuid, n: usize) {
        if let Some(left) = self.in_flight.get_mut(&tenant_id) {
            *left = left.saturating_sub(n);
            if *left == 0 {
                self.in_flight.remove(&tenant_id);
            }
        }
    }

    /// `tenant_id`'s events in memory: waiting, and taken by the flush in progress.
    pub(super) fn of(&self, tenant_id: Uuid) -> usize {
        let waiting = self
            .index
            .get(&tenant_id)
            .map_or(0, |&i| self.tenants[i].1.len());
        waiting + self.in_flight.get(&tenant_id).copied().unwrap_or(0)
    }

    /// Every tenant's events in memory.
    pub(super) fn all(&self) -> usize {
        self.len + self.in_flight.values().sum::<usize>()
    }
}

/// Events waiting to be written.
#[derive(Default)]
pub struct AuditBuffer {
    pub(super) pending: Mutex<Pending>,
    /// The last sequence number this instance wrote per tenant: a head found below it was
    /// rewound in the database (entries deleted from the end), and nothing is built on it.
    pub(super) written: Mutex<HashMap<Uuid, i64>>,
    /// Held for a whole flush: a reader's flush waits for the one in flight.
    pub(super) flushing: futures_util::lock::Mutex<()>,
    /// Per tenant, the events of an append that was in flight when its flush was dropped.
    pub(super) unsure: Mutex<HashMap<Uuid, Unsure>>,
    /// Tenants whose chain a row beyond the head blocks, with the flushes that found it so.
    /// Their events wait without making the flusher hurry (`audit_backlog`), and each flush
    /// looks whether the row is still there before building their entries again.
    pub(super) blocked: Mutex<HashMap<Uuid, u64>>,
    /// Tenants whose last append failed: their requests do not wait for room (`room.rs`).
    pub(super) stalled: Mutex<HashSet<Uuid>>,
    /// Told whenever a tenant's events in memory shrink, or its appends start failing.
    pub(super) room: event_listener::Event,
    /// Requests refused because their tenant's log stayed behind (`GET /metrics`).
    pub(super) refused: std::sync::atomic::AtomicU64,
}

/// Events put back by a flush dropped during their append, which may have committed.
#[derive(Clone, Debug)]
pub(super) struct Unsure {
    /// The head sequence number the append built on.
    pub(super) after: i64,
    /// The events' ids, in chain order.
    pub(super) ids: Vec<Uuid>,
}

impl AuditBuffer {
    pub(super) fn unsure(&self) -> MutexGuard<'_, HashMap<Uuid, Unsure>> {
        self.unsure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn blocked(&self) -> MutexGuard<'_, HashMap<Uuid, u64>> {
        self.blocked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn stalled(&self) -> MutexGuard<'_, HashSet<Uuid>> {
        self.stalled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(in crate::service) fn pending(&self) -> MutexGuard<'_, Pending> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `n` of `tenant_id`'s events in flight are written; tells the requests waiting for room.
    /// A tenant whose appends had failed waits for room again once it is below the mark (not
    /// at its first append after an outage, with its whole backlog still to write).
    pub(super) fn appended(&self, tenant_id: Uuid, n: usize) {
        let below = {
            let mut pending = self.pending();
            pending.settled(tenant_id, n);
            pending.of(tenant_id) < pending.high_water
        };
        if below {
            self.stalled().remove(&tenant_id);
        }
        self.room.notify(usize::MAX);
    }

    /// `n` of `tenant_id`'s events in flight were not written: `back` (lists of them, each put
    /// in front of the tenant's waiting events in turn) waits for the next flush, and the
    /// tenant's requests no longer wait for room that the flush is not making.
    pub(super) fn failed(
        &self,
        tenant_id: Uuid,
        n: usize,
        back: impl Iterator<Item = Vec<AuditEvent>>,
    ) {
        {
            // Under one lock: nothing sees these events both in flight and waiting.
            let mut pending = self.pending();
            for events in back.filter(|events| !events.is_empty()) {
                pending.requeue(events);
            }
            pending.settled(tenant_id, n);
        }
        self.stalled().insert(tenant_id);
        self.room.notify(usize::MAX);
    }

    /// `n` of `tenant_id`'s events in flight are dropped with their deleted tenant.
    pub(super) fn gone(&self, tenant_id: Uuid, n: usize) {
        self.pending().settled(tenant_id, n);
        self.stalled().remove(&tenant_id);
        self.room.notify(usize::MAX);
    }
}

/// A flush's events until they are written. Dropped before the flush finished (the future
/// running it was dropped at an `await`, as actix drops a `GET /logs` whose client left), it
/// puts back, in order and ahead of newer events, every event not known to be written; those
/// of an append that was in flight are marked [`Unsure`], and the next flush looks in the chain
/// before writing them again. It holds the flush lock, released only after that.
pub(super) struct Unwritten<'a> {
    pub(super) buffer: &'a AuditBuffer,
    /// Tenants not tried yet, each with its events, in the order recorded.
    pub(super) waiting: VecDeque<(Uuid, Vec<AuditEvent>)>,
    /// The tenant being written and its events not known to be written.
    pub(super) current: Option<(Uuid, Vec<AuditEvent>)>,
    /// While `current`'s append is in flight: the head sequence number it builds on.
    pub(super) appending: Option<i64>,
    /// Dropped after `drop` put the events back: no other flush takes the buffer before.
    pub(super) _one_at_a_time: futures_util::lock::MutexGuard<'a, ()>,
}

impl Drop for Unwritten<'_> {
    fn drop(&mut self) {
        if let (Some((tenant_id, events)), Some(after)) = (&self.current, self.appending.take())
            && !events.is_empty()
        {
            let ids = events.iter().map(|e| e.id).collect();
            self.buffer
                .unsure()
                .insert(*tenant_id, Unsure { after, ids });
        }
        let back: Vec<AuditEvent> = self
            .current
            .take()
            .into_iter()
            .chain(self.waiting.drain(..))
            .flat_map(|(_, events)| events)
            .collect();
        if !back.is_empty() {
            tracing::warn!(
                events = back.len(),
                "audit flush interrupted; its unwritten events are kept for the next flush"
            );
        }
        let mut pending = self.buffer.pending();
        if !back.is_empty() {
            pending.requeue(back);
        }
        pending.in_flight.clear();
        drop(pending);
        self.buffer.room.notify(usize::MAX);
    }
}

impl AuditTrail for AuditBuffer {
    fn record(&self, tenant_id: Uuid, events: Vec<AuditEvent>) {
        if !events.is_empty() {
            self.pending().admit(tenant_id, events);
        }
    }
}

impl std::fmt::Debug for AuditBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditBuffer").finish_non_exhaustive()
    }
}
