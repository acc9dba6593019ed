//! The audit log (docs/decisions.md §11). Use cases record what they did after it succeeded;
//! events wait in memory and a background job appends them to each tenant's hash chain in
//! batches (every 200 ms, at shutdown, and before `GET /logs` reads), so recording costs a
//! request no database round trip.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Mutex, MutexGuard};

use uuid::Uuid;

use super::Vault;
use crate::audit::{
    ActorType, AppendOutcome, AuditBreak, AuditEntry, AuditEvent, AuditFilter, AuditHead,
    AuditVerification, StoredEvent, chain_input,
};
use crate::auth::Principal;
use crate::error::Error;
use crate::page::{Page, PageRequest};
use crate::permission::Permission;

/// How many times a flush retries a tenant whose head another instance moved meanwhile.
const APPEND_ATTEMPTS: usize = 8;

/// While a tenant's chain stays blocked, its error is logged once every this many flushes
/// (about a minute at the flusher's pace).
const BLOCKED_LOG_EVERY: u64 = 300;

/// Entries read per query while verifying.
const VERIFY_BATCH: u64 = 1_000;

/// The most events kept waiting (about 300 MB) while the database refuses them.
const MAX_PENDING: usize = 1_000_000;

/// The most events of one tenant kept waiting: beyond, that tenant's new events are dropped and
/// counted, and every flush reports the count as an error naming the tenant. One tenant's
/// flood (or its log that cannot be written) never drops another tenant's events.
const MAX_PENDING_PER_TENANT: usize = 100_000;

/// One tenant's events, in the order recorded.
type TenantEvents = (Uuid, Vec<AuditEvent>);

/// Events waiting to be written, per tenant in the order recorded, each tenant within its own
/// bound.
pub(super) struct Pending {
    /// Tenants in the order they first had an event waiting, each with its events.
    tenants: Vec<TenantEvents>,
    /// Where each tenant is in `tenants`.
    index: HashMap<Uuid, usize>,
    /// Events waiting, all tenants.
    len: usize,
    /// Events dropped per tenant, not yet reported.
    dropped: HashMap<Uuid, u64>,
    /// The most events of one tenant.
    per_tenant: usize,
    /// The most events of all tenants.
    total: usize,
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
        }
    }
}

impl Pending {
    /// Other bounds (tests).
    #[cfg(test)]
    pub(super) fn limit(&mut self, per_tenant: usize, total: usize) {
        self.per_tenant = per_tenant;
        self.total = total;
    }

    fn events_of(&mut self, tenant_id: Uuid) -> &mut Vec<AuditEvent> {
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
    fn admit(&mut self, tenant_id: Uuid, events: Vec<AuditEvent>) {
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
    fn requeue(&mut self, events: Vec<AuditEvent>) {
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

    /// Everything waiting, per tenant in order, and the drops not yet reported.
    fn take(&mut self) -> (Vec<TenantEvents>, HashMap<Uuid, u64>) {
        self.index.clear();
        self.len = 0;
        self.tenants.retain(|(_, events)| !events.is_empty());
        (
            std::mem::take(&mut self.tenants),
            std::mem::take(&mut self.dropped),
        )
    }
}

/// Events waiting to be written.
#[derive(Default)]
pub struct AuditBuffer {
    pub(super) pending: Mutex<Pending>,
    /// The last sequence number this instance wrote per tenant: a head found below it was
    /// rewound in the database (entries deleted from the end), and nothing is built on it.
    written: Mutex<HashMap<Uuid, i64>>,
    /// Held for a whole flush: a reader's flush waits for the one in flight.
    flushing: futures_util::lock::Mutex<()>,
    /// Per tenant, the events of an append that was in flight when its flush was dropped.
    unsure: Mutex<HashMap<Uuid, Unsure>>,
    /// Tenants whose chain a row beyond the head blocks, with the flushes that found it so.
    /// Their events wait without making the flusher hurry (`audit_backlog`), and each flush
    /// looks whether the row is still there before building their entries again.
    blocked: Mutex<HashMap<Uuid, u64>>,
}

/// Events put back by a flush dropped during their append, which may have committed.
#[derive(Clone, Debug)]
struct Unsure {
    /// The head sequence number the append built on.
    after: i64,
    /// The events' ids, in chain order.
    ids: Vec<Uuid>,
}

impl AuditBuffer {
    fn unsure(&self) -> MutexGuard<'_, HashMap<Uuid, Unsure>> {
        self.unsure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn blocked(&self) -> MutexGuard<'_, HashMap<Uuid, u64>> {
        self.blocked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn pending(&self) -> MutexGuard<'_, Pending> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Puts `events` back ahead of those recorded since they were taken.
    fn requeue(&self, events: Vec<AuditEvent>) {
        if events.is_empty() {
            return;
        }
        self.pending().requeue(events);
    }
}

/// A flush's events until they are written. Dropped before the flush finished (the future
/// running it was dropped at an `await`, as actix drops a `GET /logs` whose client left), it
/// puts back, in order and ahead of newer events, every event not known to be written; those
/// of an append that was in flight are marked [`Unsure`], and the next flush looks in the chain
/// before writing them again. It holds the flush lock, released only after that.
struct Unwritten<'a> {
    buffer: &'a AuditBuffer,
    /// Tenants not tried yet, each with its events, in the order recorded.
    waiting: VecDeque<(Uuid, Vec<AuditEvent>)>,
    /// The tenant being written and its events not known to be written.
    current: Option<(Uuid, Vec<AuditEvent>)>,
    /// While `current`'s append is in flight: the head sequence number it builds on.
    appending: Option<i64>,
    /// Dropped after `drop` put the events back: no other flush takes the buffer before.
    _one_at_a_time: futures_util::lock::MutexGuard<'a, ()>,
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
        self.buffer.requeue(back);
    }
}

impl std::fmt::Debug for AuditBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditBuffer").finish_non_exhaustive()
    }
}

impl Vault {
    /// Records that `caller` did `operation` to each of `ids` (of kind `entity_type`).
    pub(super) fn audit<I, S>(
        &self,
        caller: &Principal,
        operation: &'static str,
        entity_type: &'static str,
        ids: I,
    ) where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let actor_type = if caller.session.is_some() {
            ActorType::Session
        } else {
            ActorType::Application
        };
        self.record(
            caller.tenant_id,
            actor_type,
            Some(caller.application_id),
            caller.trace_id.clone(),
            operation,
            entity_type,
            ids,
        );
    }

    /// Records what happened without an API key: the server itself (`System`: command line,
    /// bootstrap) or a caller without one (`Anonymous`: a proxy that needs no key).
    pub(super) fn audit_unkeyed(
        &self,
        tenant_id: Uuid,
        actor_type: ActorType,
        operation: &'static str,
        entity_type: &'static str,
        id: impl Into<String>,
    ) {
        self.record(
            tenant_id,
            actor_type,
            None,
            None,
            operation,
            entity_type,
            [id],
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn record<I, S>(
        &self,
        tenant_id: Uuid,
        actor_type: ActorType,
        actor_id: Option<Uuid>,
        trace_id: Option<String>,
        operation: &'static str,
        entity_type: &'static str,
        ids: I,
    ) where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let now = self.ports.clock.now();
        let events: Vec<AuditEvent> = ids
            .into_iter()
            .map(|id| AuditEvent {
                id: self.ports.clock.new_id(),
                tenant_id,
                actor_type,
                actor_id,
                operation,
                entity_type,
                entity_id: id.into(),
                trace_id: trace_id.clone(),
                created_at: now,
            })
            .collect();
        if events.is_empty() {
            return;
        }
        self.audit_buffer.pending().admit(tenant_id, events);
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

    /// Background job (and `GET /logs`): appends buffered events to their tenants' chains.
    /// One flush at a time; on return every event recorded before the call is written, or the
    /// error is returned and the events wait for the next flush. Events of a deleted tenant
    /// are dropped with it. A flush that is dropped before it finished (actix drops a `GET
    /// /logs` whose client left) loses nothing: what it had not written goes back to the front
    /// of the buffer (`Unwritten`).
    pub async fn flush_audit(&self) -> Result<usize, Error> {
        let one_at_a_time = self.audit_buffer.flushing.lock().await;
        let (batch, dropped) = self.audit_buffer.pending().take();
        for (tenant_id, dropped) in dropped {
            tracing::error!(
                %tenant_id,
                dropped,
                "audit events dropped: the tenant's log could not be written fast enough and \
                 its waiting events reached their bound"
            );
        }
        if batch.is_empty() {
            return Ok(0);
        }
        // From here until each tenant's events are written, they are held by the guard, which
        // puts back whatever is left if this future is dropped at an `await`.
        let mut unwritten = Unwritten {
            buffer: &self.audit_buffer,
            waiting: VecDeque::new(),
            current: None,
            appending: None,
            _one_at_a_time: one_at_a_time,
        };
        unwritten.waiting.extend(batch);
        let mut written = 0;
        let mut failure = None;
        // Each tenant on its own: one tenant's broken chain never stops another's log.
        while let Some((tenant_id, events)) = unwritten.waiting.pop_front() {
            unwritten.current = Some((tenant_id, events));
            match self.append_chain(tenant_id, &mut unwritten).await {
                Ok(n) => {
                    unwritten.current = None;
                    written += n;
                }
                Err(e) => {
                    if matches!(self.ports.tenants.get(tenant_id).await, Ok(None)) {
                        // The tenant is gone, and its log with it.
                        unwritten.current = None;
                        self.audit_buffer.unsure().remove(&tenant_id);
                        continue;
                    }
                    if !self.audit_buffer.blocked().contains_key(&tenant_id) {
                        tracing::error!(%tenant_id, error = %e, "audit events not written; kept for the next flush");
                    }
                    if let Some((_, events)) = unwritten.current.take() {
                        self.audit_buffer.requeue(events);
                    }
                    failure.get_or_insert(e);
                }
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(written),
        }
    }

    /// Appends `unwritten.current` (one tenant's events, in order) to the tenant's chain,
    /// first dropping those a dropped flush's append already wrote.
    async fn append_chain(
        &self,
        tenant_id: Uuid,
        unwritten: &mut Unwritten<'_>,
    ) -> Result<usize, Error> {
        self.ensure_key(tenant_id).await?;
        self.settle(tenant_id, unwritten).await?;
        let Some((_, events)) = &unwritten.current else {
            return Ok(0);
        };
        if events.is_empty() {
            return Ok(0);
        }
        for _ in 0..APPEND_ATTEMPTS {
            let head = self.ports.audit.head(tenant_id).await?;
            let after = head.as_ref().map_or(0, |h| h.seq);
            if after < self.last_written(tenant_id) {
                return Err(Error::internal(
                    "the audit chain head moved backwards: entries were removed from its end",
                ));
            }
            // Blocked before: a look past the head, rather than building every entry again.
            if self.audit_buffer.blocked().contains_key(&tenant_id) {
                let beyond = self.ports.audit.chain(tenant_id, after, 1).await?;
                if let Some(row) = beyond.into_iter().next() {
                    return Err(self.blocked_chain(tenant_id, after, Some(row)));
                }
            }
            let (mut seq, mut previous) = head
                .as_ref()
                .map_or((0, String::new()), |h| (h.seq, h.hash.clone()));
            let mut entries = Vec::with_capacity(events.len());
            for event in events {
                seq += 1;
                let stored = StoredEvent::from(event);
                let hash = self.audit_mac(tenant_id, &previous, seq, &stored)?;
                previous.clone_from(&hash);
                entries.push(AuditEntry {
                    event: stored,
                    seq,
                    hash,
                });
            }
            // While the append is in flight, a drop cannot tell whether it committed.
            unwritten.appending = Some(head.as_ref().map_or(0, |h| h.seq));
            let appended = self
                .ports
                .audit
                .append(tenant_id, head.as_ref(), &entries)
                .await;
            unwritten.appending = None;
            let outcome = match appended {
                Ok(outcome) => outcome,
                Err(e) => {
                    // The append may have committed before it failed (a connection lost during
                    // its `COMMIT`): the next flush looks in the chain before writing these
                    // events again, as after a dropped flush.
                    let ids = events.iter().map(|e| e.id).collect();
                    let after = head.as_ref().map_or(0, |h| h.seq);
                    self.audit_buffer
                        .unsure()
                        .insert(tenant_id, Unsure { after, ids });
                    return Err(e.into());
                }
            };
            match outcome {
                AppendOutcome::Appended => {
                    if self.audit_buffer.blocked().remove(&tenant_id).is_some() {
                        tracing::warn!(%tenant_id, "the audit chain is no longer blocked: the waiting events are written");
                    }
                    self.audit_buffer
                        .written
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .insert(tenant_id, seq);
                    return Ok(entries.len());
                }
                // Another instance appended first: build on its head.
                AppendOutcome::HeadMoved => {}
                AppendOutcome::SeqTaken => {
                    let beyond = self.ports.audit.chain(tenant_id, after, 1).await;
                    let row = beyond.ok().and_then(|rows| rows.into_iter().next());
                    return Err(self.blocked_chain(tenant_id, after, row));
                }
            }
        }
        Err(Error::internal("the audit chain head kept moving"))
    }

    /// The error of an append whose place was taken by a row beyond the unchanged head at
    /// `after`: no appender can be racing (the head did not move), the chain is broken, and
    /// every later append of the tenant meets the same row. Logged as an error naming the row
    /// (`tokenvault audit verify` reports it too); the events wait in the buffer, within the
    /// tenant's bound, until the row is removed.
    ///
    /// Logged when first found, then every [`BLOCKED_LOG_EVERY`] flushes while it lasts.
    fn blocked_chain(&self, tenant_id: Uuid, after: i64, row: Option<AuditEntry>) -> Error {
        let (seq, entry_id) = row.map_or((after + 1, None), |e| (e.seq, Some(e.event.id)));
        let flushes = {
            let mut blocked = self.audit_buffer.blocked();
            let flushes = blocked.entry(tenant_id).or_insert(0);
            *flushes += 1;
            *flushes
        };
        if flushes % BLOCKED_LOG_EVERY == 1 {
            tracing::error!(
                %tenant_id,
                head = after,
                blocking_sequence = seq,
                blocking_entry = ?entry_id,
                flushes,
                "the audit chain is broken: a row lies beyond its head that no append wrote, and \
                 no entry of this tenant can be recorded until it is removed (tokenvault audit \
                 verify names it); its events wait within the tenant's bound"
            );
        }
        Error::internal(format!(
            "the audit chain of tenant {tenant_id} is broken: entry {seq} lies beyond its head \
             (sequence {after}) and blocks every append"
        ))
    }

    /// A flush dropped while its append for `tenant_id` was in flight left the events behind
    /// it unsure: if the chain holds the first of them right after the head that append built
    /// on, the append committed (it is atomic) and they are not written twice.
    async fn settle(&self, tenant_id: Uuid, unwritten: &mut Unwritten<'_>) -> Result<(), Error> {
        let unsure = self.audit_buffer.unsure().get(&tenant_id).cloned();
        let Some(unsure) = unsure else {
            return Ok(());
        };
        let next = self.ports.audit.chain(tenant_id, unsure.after, 1).await?;
        if next.first().map(|e| e.event.id) == unsure.ids.first().copied() {
            let ids: HashSet<Uuid> = unsure.ids.iter().copied().collect();
            if let Some((_, events)) = &mut unwritten.current {
                events.retain(|e| !ids.contains(&e.id));
            }
            let seq = unsure.after + i64::try_from(unsure.ids.len()).unwrap_or(i64::MAX);
            let mut written = self
                .audit_buffer
                .written
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let last = written.entry(tenant_id).or_insert(0);
            *last = (*last).max(seq);
        }
        self.audit_buffer.unsure().remove(&tenant_id);
        Ok(())
    }

    fn last_written(&self, tenant_id: Uuid) -> i64 {
        self.audit_buffer
            .written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&tenant_id)
            .copied()
            .unwrap_or(0)
    }

    fn audit_mac(
        &self,
        tenant_id: Uuid,
        previous: &str,
        seq: i64,
        event: &StoredEvent,
    ) -> Result<String, Error> {
        self.ports
            .cipher
            .fingerprint(tenant_id, &chain_input(previous, seq, event))
            .map_err(|_| Error::internal("audit MAC failed"))
    }

    /// `GET /logs`: a page of the caller's tenant's log, newest first (`log:read`).
    pub async fn audit_log(
        &self,
        caller: &Principal,
        filter: AuditFilter,
        page: PageRequest,
    ) -> Result<Page<AuditEntry>, Error> {
        caller.require(Permission::LogRead)?;
        if let (Some(start), Some(end)) = (filter.start, filter.end)
            && start > end
        {
            return Err(Error::invalid("start_date", "must not be after end_date"));
        }
        if let Err(e) = self.flush_audit().await {
            tracing::warn!(error = %e, "audit flush before reading the log failed");
        }
        Ok(self
            .ports
            .audit
            .list(caller.tenant_id, &filter, page)
            .await?)
    }

    /// `tokenvault audit verify`: walks each tenant's chain (or one tenant's) and reports the
    /// first entry at which it does not hold: a gap in the sequence (a deleted entry), a hash
    /// that does not match (an edited entry), a head that does not match the last entry (a
    /// deleted end), or a row beyond the head (one no append wrote, which blocks every later
    /// append). Entries appended while it runs are verified too: the head is read again at the
    /// end.
    pub async fn verify_audit(
        &self,
        tenant: Option<Uuid>,
    ) -> Result<Vec<AuditVerification>, Error> {
        self.flush_audit().await?;
        let tenants = match tenant {
            Some(t) => vec![t],
            None => self.ports.audit.tenants().await?,
        };
        let mut out = Vec::with_capacity(tenants.len());
        for tenant_id in tenants {
            out.push(self.verify_tenant(tenant_id).await?);
        }
        Ok(out)
    }

    async fn verify_tenant(&self, tenant_id: Uuid) -> Result<AuditVerification, Error> {
        self.ensure_key(tenant_id).await?;
        let mut head = self.ports.audit.head(tenant_id).await?;
        let mut previous = String::new();
        let mut last = 0_i64;
        let mut entries = 0_u64;
        let broken = |seq, entry_id, reason: String| AuditBreak {
            tenant_id,
            seq,
            entry_id,
            reason,
        };
        let reach = |head: &Option<AuditHead>| head.as_ref().map_or(0, |h| h.seq);
        // Every row of the tenant is read, past the head too: a row beyond the head blocks
        // every later append (its place is taken), and must not pass as a log at rest. An
        // append commits its entries with the head, so a row read before the head is read
        // again lies within that head if an append wrote it; the head is read again whenever a
        // row lies past the one read before, and at the end.
        loop {
            let batch = self
                .ports
                .audit
                .chain(tenant_id, last, VERIFY_BATCH)
                .await?;
            if batch.is_empty() {
                let now = self.ports.audit.head(tenant_id).await?;
                let moved = now != head;
                head = now;
                if moved && reach(&head) > last {
                    // Appended meanwhile: read on.
                    continue;
                }
                break;
            }
            for entry in batch {
                if entry.seq > reach(&head) {
                    head = self.ports.audit.head(tenant_id).await?;
                }
                let end = reach(&head);
                if entry.seq > end && last >= end {
                    let reason = format!(
                        "entry {} lies beyond the head ({}): no append wrote it, and it \
                         blocks every later append to this log",
                        entry.seq,
                        head.as_ref().map_or_else(
                            || "there is none".to_string(),
                            |h| format!("sequence {}", h.seq)
                        ),
                    );
                    return Ok(verification(
                        tenant_id,
                        head.as_ref(),
                        entries,
                        Some(broken(entry.seq, Some(entry.event.id), reason)),
                    ));
                }
                let expected = last + 1;
                if entry.seq != expected {
                    let to = (entry.seq - 1).min(end);
                    let reason = if to < entry.seq - 1 {
                        format!("entries {expected} to {to} are missing (the end of the log)")
                    } else {
                        format!("entries {expected} to {to} are missing")
                    };
                    return Ok(verification(
                        tenant_id,
                        head.as_ref(),
                        entries,
                        Some(broken(expected, None, reason)),
                    ));
                }
                let mac = self.audit_mac(tenant_id, &previous, entry.seq, &entry.event)?;
                if !same(mac.as_bytes(), entry.hash.as_bytes()) {
                    let reason = "the entry does not match its hash: it was altered".to_string();
                    return Ok(verification(
                        tenant_id,
                        head.as_ref(),
                        entries,
                        Some(broken(entry.seq, Some(entry.event.id), reason)),
                    ));
                }
                previous = entry.hash;
                last = entry.seq;
                entries += 1;
            }
        }
        let end = match &head {
            None if entries == 0 => None,
            None => Some(broken(1, None, "the log has entries but no head".into())),
            Some(AuditHead { seq, .. }) if *seq > last => Some(broken(
                last + 1,
                None,
                format!(
                    "entries {} to {seq} are missing (the end of the log)",
                    last + 1
                ),
            )),
            Some(AuditHead { hash, .. }) if *hash != previous => Some(broken(
                last,
                None,
                "the head does not match the last entry".into(),
            )),
            Some(_) => None,
        };
        Ok(verification(tenant_id, head.as_ref(), entries, end))
    }
}

/// Compares two MACs in time independent of where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn verification(
    tenant_id: Uuid,
    head: Option<&AuditHead>,
    entries: u64,
    broken: Option<AuditBreak>,
) -> AuditVerification {
    AuditVerification {
        tenant_id,
        entries,
        head: head.cloned(),
        broken,
    }
}
