//! Appending the buffered events to each tenant's hash chain: one flush at a time, a tenant
//! whose head another instance moved is tried again, a chain blocked by a row past its head
//! keeps its events and is reported.

use std::collections::{HashSet, VecDeque};

use uuid::Uuid;

use super::buffer::{Unsure, Unwritten};
use crate::audit::{AppendOutcome, AuditEntry, StoredEvent};
use crate::error::Error;
use crate::service::AuditLog;

/// How many times a flush retries a tenant whose head another instance moved meanwhile.
const APPEND_ATTEMPTS: usize = 8;
/// The most events of one tenant in one append. A flush under load can find tens of thousands
/// waiting; appending them in bounded pieces bounds what is held twice meanwhile (the events,
/// their entries and the statement's encoding: the bench's PostgreSQL server peaked at 113–150
/// MiB appending whole backlogs) and, on SQLite, how long one append holds the write lock.
/// Each piece is a transaction and, on SQLite, a disk sync: pieces of 512 made the flush fall
/// behind a children-page load there (158,000 waiting, against about 1,000 with 4,096).
pub(crate) const APPEND_CHUNK: usize = 4_096;
/// While a tenant's chain stays blocked, its error is logged once every this many flushes
/// (about a minute at the flusher's pace).
const BLOCKED_LOG_EVERY: u64 = 300;

impl AuditLog {
    /// Background job (and `GET /logs`): appends buffered events to their tenants' chains.
    /// One flush at a time; on return every event recorded before the call is written, or the
    /// error is returned and the events wait for the next flush. Events of a deleted tenant
    /// are dropped with it. A flush that is dropped before it finished (actix drops a `GET
    /// /logs` whose client left) loses nothing: what it had not written goes back to the front
    /// of the buffer (`Unwritten`).
    pub async fn flush_audit(&self) -> Result<usize, Error> {
        let one_at_a_time = self.audit_buffer.flushing.lock().await;
        // Counted in flight under the same lock that empties the buffer, so that
        // `audit_waiting` never sees them in neither place.
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
        // Each tenant on its own: one tenant's broken chain never stops another's log. A
        // tenant's events go in appends of at most `APPEND_CHUNK`, the rest waiting in front.
        while let Some((tenant_id, mut events)) = unwritten.waiting.pop_front() {
            if events.len() > APPEND_CHUNK {
                let rest = events.split_off(APPEND_CHUNK);
                unwritten.waiting.push_front((tenant_id, rest));
            }
            let chunk = events.len();
            unwritten.current = Some((tenant_id, events));
            match self.append_chain(tenant_id, &mut unwritten).await {
                Ok(n) => {
                    unwritten.current = None;
                    self.audit_buffer.appended(tenant_id, chunk);
                    written += n;
                }
                Err(e) => {
                    let gone = matches!(self.tenants.is_live(tenant_id).await, Ok(false));
                    // No `await` from here to the end of this turn: what is taken out of
                    // `unwritten` below is put back or dropped before the future can be.
                    // The tenant's later chunks wait behind this one (or go with it).
                    let rest = match unwritten.waiting.front() {
                        Some((next, _)) if *next == tenant_id => unwritten.waiting.pop_front(),
                        _ => None,
                    };
                    let taken = chunk + rest.as_ref().map_or(0, |(_, r)| r.len());
                    if gone {
                        // The tenant is gone, and its log with it.
                        unwritten.current = None;
                        self.audit_buffer.unsure().remove(&tenant_id);
                        self.audit_buffer.gone(tenant_id, taken);
                        continue;
                    }
                    if !self.audit_buffer.blocked().contains_key(&tenant_id) {
                        tracing::error!(%tenant_id, error = %e, "audit events not written; kept for the next flush");
                    }
                    // Each requeue goes in front of the tenant's waiting events: the rest
                    // first, then this chunk ahead of it, keeping the recorded order.
                    let back = [rest, unwritten.current.take()].into_iter().flatten();
                    self.audit_buffer
                        .failed(tenant_id, taken, back.map(|(_, events)| events));
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
        self.shared.ensure_key(tenant_id).await?;
        self.settle(tenant_id, unwritten).await?;
        let Some((_, events)) = &unwritten.current else {
            return Ok(0);
        };
        if events.is_empty() {
            return Ok(0);
        }
        for _ in 0..APPEND_ATTEMPTS {
            let head = self.audit.head(tenant_id).await?;
            let after = head.as_ref().map_or(0, |h| h.seq);
            if after < self.last_written(tenant_id) {
                return Err(Error::internal(
                    "the audit chain head moved backwards: entries were removed from its end",
                ));
            }
            // Blocked before: a look past the head, rather than building every entry again.
            if self.audit_buffer.blocked().contains_key(&tenant_id) {
                let beyond = self.audit.chain(tenant_id, after, 1).await?;
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
            let appended = self.audit.append(tenant_id, head.as_ref(), &entries).await;
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
                    let beyond = self.audit.chain(tenant_id, after, 1).await;
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
        let next = self.audit.chain(tenant_id, unsure.after, 1).await?;
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
}
