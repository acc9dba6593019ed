//! Back-pressure from the audit log: a request of a tenant whose log is behind waits for room.
//!
//! Every request a tenant makes records its audit events in memory, and the flusher writes
//! them (`flush.rs`). A load that outruns the database would otherwise grow the tenant's
//! waiting events until their bound (`MAX_PENDING_PER_TENANT`), and then drop later ones: the
//! memory and the loss would follow the load. Instead, once a tenant has
//! [`HIGH_WATER`](super::buffer::HIGH_WATER) events in memory (waiting, or taken by the flush
//! in progress; `TOKENVAULT_AUDIT_HIGH_WATER`), its
//! next requests wait once admitted (their key and rate limit checked: `Authenticator::room`)
//! until the flush brings it below, and one that waited [`MAX_WAIT`] in vain is refused
//! (`Error::Overloaded`, a 503 with `Retry-After`) without having run; so is one that finds
//! [`MAX_WAITERS`] of its tenant's requests waiting already (each holds its connection and
//! what it has read). So a flood slows its own tenant to the pace its log is written at;
//! no other tenant's request waits. Any caller of the tenant counts, a public key or a proxy
//! that needs none included: the per-application rate limit is what keeps one of them from
//! slowing the rest of its tenant.
//!
//! A tenant whose last append failed (the database refuses writes, a broken chain) does not
//! wait: the flush is not making room for it, and its requests run as before, within the
//! bound after which its new events are dropped and counted (docs/decisions.md §11).

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use futures_util::future::{Either, select};
use uuid::Uuid;

use super::buffer::AuditBuffer;
use crate::error::Error;
use crate::ports::Clock;

/// How long a request waits for room before it is refused.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(2);

/// The most requests of one tenant waiting for room at once; beyond, refused at once.
pub(crate) const MAX_WAITERS: usize = 64;

impl AuditBuffer {
    fn has_room(&self, tenant_id: Uuid) -> bool {
        let below = {
            let pending = self.pending();
            pending.of(tenant_id) < pending.high_water
        };
        below || self.stalled().contains(&tenant_id)
    }

    /// Returns at once while `tenant_id` has room in the log (or its appends fail); otherwise
    /// once the flush made room, or `Overloaded` after [`MAX_WAIT`].
    pub(crate) async fn room(&self, tenant_id: Uuid, clock: &dyn Clock) -> Result<(), Error> {
        if self.has_room(tenant_id) {
            return Ok(());
        }
        let Some(_waiting) = Waiting::enter(self, tenant_id) else {
            return Err(self.refuse());
        };
        let mut timeout = clock.sleep(MAX_WAIT);
        loop {
            // Listening before looking again: a flush that makes room in between is not missed.
            let listener = self.room.listen();
            if self.has_room(tenant_id) {
                return Ok(());
            }
            match select(listener, timeout).await {
                Either::Left(((), rest)) => timeout = rest,
                Either::Right(_) => {
                    if self.has_room(tenant_id) {
                        return Ok(());
                    }
                    return Err(self.refuse());
                }
            }
        }
    }

    fn refuse(&self) -> Error {
        self.refused.fetch_add(1, Relaxed);
        Error::Overloaded("the tenant's audit log")
    }
}

/// One request counted among its tenant's waiters while it waits (also when its future is
/// dropped: the client left).
struct Waiting<'a> {
    buffer: &'a AuditBuffer,
    tenant_id: Uuid,
}

impl<'a> Waiting<'a> {
    /// Counts a waiter of `tenant_id`, unless [`MAX_WAITERS`] wait already.
    fn enter(buffer: &'a AuditBuffer, tenant_id: Uuid) -> Option<Self> {
        let mut pending = buffer.pending();
        let waiters = pending.waiters.entry(tenant_id).or_insert(0);
        if *waiters >= MAX_WAITERS {
            return None;
        }
        *waiters += 1;
        Some(Self { buffer, tenant_id })
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut pending = self.buffer.pending();
        if let Some(waiters) = pending.waiters.get_mut(&self.tenant_id) {
            *waiters -= 1;
            if *waiters == 0 {
                pending.waiters.remove(&self.tenant_id);
            }
        }
    }
}
