//! The audit log (docs/decisions.md §11). Use cases record what they did after it succeeded;
//! events wait in memory and a background job appends them to each tenant's hash chain in
//! batches (every 200 ms, at shutdown, and before `GET /logs` reads), so recording costs a
//! request no database round trip.

use std::collections::HashMap;
use std::sync::Mutex;

use uuid::Uuid;

use super::Vault;
use crate::audit::{
    ActorType, AuditBreak, AuditEntry, AuditEvent, AuditFilter, AuditHead, AuditVerification,
    StoredEvent, chain_input,
};
use crate::auth::Principal;
use crate::error::Error;
use crate::page::{Page, PageRequest};
use crate::permission::Permission;

/// How many times a flush retries a tenant whose head another instance moved meanwhile.
const APPEND_ATTEMPTS: usize = 8;

/// Entries read per query while verifying.
const VERIFY_BATCH: u64 = 1_000;

/// The most events kept waiting (about 300 MB) while the database refuses them; beyond, new
/// events are dropped and counted, and every flush reports the count as an error.
const MAX_PENDING: usize = 1_000_000;

/// Events waiting to be written.
#[derive(Default)]
pub struct AuditBuffer {
    pending: Mutex<Vec<AuditEvent>>,
    /// Events dropped because the buffer was full, not yet reported.
    dropped: std::sync::atomic::AtomicU64,
    /// The last sequence number this instance wrote per tenant: a head found below it was
    /// rewound in the database (entries deleted from the end), and nothing is built on it.
    written: Mutex<HashMap<Uuid, i64>>,
    /// Held for a whole flush: a reader's flush waits for the one in flight.
    flushing: futures_util::lock::Mutex<()>,
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
        let mut pending = self
            .audit_buffer
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if pending.len() + events.len() > MAX_PENDING {
            self.audit_buffer
                .dropped
                .fetch_add(events.len() as u64, std::sync::atomic::Ordering::Relaxed);
            return;
        }
        pending.extend(events);
    }

    /// Background job (and `GET /logs`): appends buffered events to their tenants' chains.
    /// One flush at a time; on return every event recorded before the call is written, or the
    /// error is returned and the events wait for the next flush. Events of a deleted tenant
    /// are dropped with it.
    pub async fn flush_audit(&self) -> Result<usize, Error> {
        let _one_at_a_time = self.audit_buffer.flushing.lock().await;
        let dropped = self
            .audit_buffer
            .dropped
            .swap(0, std::sync::atomic::Ordering::Relaxed);
        if dropped > 0 {
            tracing::error!(
                dropped,
                "audit events dropped: the log could not be written"
            );
        }
        let batch: Vec<AuditEvent> = std::mem::take(
            &mut *self
                .audit_buffer
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        if batch.is_empty() {
            return Ok(0);
        }
        let mut order = Vec::new();
        let mut by_tenant: HashMap<Uuid, Vec<AuditEvent>> = HashMap::new();
        for event in batch {
            by_tenant
                .entry(event.tenant_id)
                .or_insert_with(|| {
                    order.push(event.tenant_id);
                    Vec::new()
                })
                .push(event);
        }
        let mut written = 0;
        let mut failure = None;
        // Each tenant on its own: one tenant's broken chain never stops another's log.
        for tenant_id in order {
            let events = by_tenant.remove(&tenant_id).unwrap_or_default();
            match self.append_chain(tenant_id, &events).await {
                Ok(n) => written += n,
                Err(e) => {
                    if matches!(self.ports.tenants.get(tenant_id).await, Ok(None)) {
                        continue; // the tenant is gone, and its log with it
                    }
                    tracing::error!(%tenant_id, error = %e, "audit events not written; kept for the next flush");
                    self.requeue(events);
                    failure.get_or_insert(e);
                }
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(written),
        }
    }

    fn requeue(&self, events: Vec<AuditEvent>) {
        let mut pending = self
            .audit_buffer
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let later = std::mem::replace(&mut *pending, events);
        pending.extend(later);
    }

    async fn append_chain(&self, tenant_id: Uuid, events: &[AuditEvent]) -> Result<usize, Error> {
        self.ensure_key(tenant_id).await?;
        for _ in 0..APPEND_ATTEMPTS {
            let head = self.ports.audit.head(tenant_id).await?;
            if head.as_ref().map_or(0, |h| h.seq) < self.last_written(tenant_id) {
                return Err(Error::internal(
                    "the audit chain head moved backwards: entries were removed from its end",
                ));
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
            if self
                .ports
                .audit
                .append(tenant_id, head.as_ref(), &entries)
                .await?
            {
                self.audit_buffer
                    .written
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(tenant_id, seq);
                return Ok(entries.len());
            }
        }
        Err(Error::internal("the audit chain head kept moving"))
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
    /// that does not match (an edited entry), or a head that does not match the last entry (a
    /// deleted end).
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
        let head = self.ports.audit.head(tenant_id).await?;
        let mut previous = String::new();
        let mut last = 0_i64;
        let mut entries = 0_u64;
        let broken = |seq, entry_id, reason: String| AuditBreak {
            tenant_id,
            seq,
            entry_id,
            reason,
        };
        // Entries past the head read first may be appended while this runs: they are left to
        // a later run.
        let end = head.as_ref().map_or(i64::MAX, |h| h.seq);
        'walk: loop {
            let batch = self
                .ports
                .audit
                .chain(tenant_id, last, VERIFY_BATCH)
                .await?;
            if batch.is_empty() {
                break;
            }
            for entry in batch {
                if last >= end {
                    break 'walk;
                }
                let expected = last + 1;
                if entry.seq != expected {
                    let reason = format!("entries {expected} to {} are missing", entry.seq - 1);
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
