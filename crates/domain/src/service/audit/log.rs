//! Reading the audit log: `GET /logs` and `tokenvault audit verify`, which walks each chain
//! and reads past its head.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use uuid::Uuid;

use crate::audit::{AuditBreak, AuditEntry, AuditFilter, AuditHead, AuditVerification};
use crate::auth::Principal;
use crate::error::Error;
use crate::page::{Page, PageRequest};
use crate::permission::Permission;
use crate::service::AuditLog;

/// The most `GET /logs/verify` walks one instance runs at a time (each reads a whole log).
const MOST_WALKS: usize = 2;

/// A tenant's walk in progress: its mark in the set, taken away when the walk ends however
/// it ends (its request dropped included).
struct Walking<'a> {
    set: &'a Mutex<HashSet<Uuid>>,
    tenant: Uuid,
}

impl<'a> Walking<'a> {
    /// `None` when `tenant` is walked already, or [`MOST_WALKS`] tenants are.
    fn start(set: &'a Mutex<HashSet<Uuid>>, tenant: Uuid) -> Option<Self> {
        let fresh = {
            let mut walking = set.lock().unwrap_or_else(PoisonError::into_inner);
            walking.len() < MOST_WALKS && walking.insert(tenant)
        };
        // Made only when marked: a `Walking` dropped unmarked would take another walk's mark.
        fresh.then(|| Self { set, tenant })
    }
}

impl Drop for Walking<'_> {
    fn drop(&mut self) {
        self.set
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.tenant);
    }
}

/// Entries read per query while verifying.
const VERIFY_BATCH: u64 = 1_000;

impl AuditLog {
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
        Ok(self.audit.list(caller.tenant_id, &filter, page).await?)
    }

    /// `GET /logs/entity-types`: the kinds of resource the log records, as `(value, display
    /// name)` (`log:read`).
    pub fn entity_types(
        &self,
        caller: &Principal,
    ) -> Result<&'static [(&'static str, &'static str)], Error> {
        caller.require(Permission::LogRead)?;
        Ok(&crate::audit::ENTITY_TYPES)
    }

    /// `GET /logs/verify`: the caller's tenant's chain, walked as `tokenvault audit verify
    /// --tenant` walks it (`log:read`). One walk per tenant and two in all (`MOST_WALKS`) at a
    /// time: another meanwhile is a 503, to be retried (a walk reads the whole log).
    pub async fn verify_own_audit(&self, caller: &Principal) -> Result<AuditVerification, Error> {
        caller.require(Permission::LogRead)?;
        let tenant = caller.tenant_id;
        let Some(_walking) = Walking::start(&self.verifying, tenant) else {
            return Err(Error::Overloaded(
                "a verification of this tenant's audit log is running",
            ));
        };
        // Another tenant's log that cannot be written must not hide this one's state (as for
        // `GET /logs`): what is written is walked.
        if let Err(e) = self.flush_audit().await {
            tracing::warn!(error = %e, "audit flush before verifying the log failed");
        }
        self.verify_tenant(tenant).await
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
        let tenants = if let Some(t) = tenant {
            vec![t]
        } else {
            // The tenants with a log, and every live tenant besides: a tenant whose whole log
            // (entries and head) was deleted has none to be listed by.
            let mut tenants = self.audit.tenants().await?;
            for (id, _) in self.tenants.data_keys().await? {
                if !tenants.contains(&id) && self.tenants.is_live(id).await? {
                    tenants.push(id);
                }
            }
            tenants
        };
        let mut out = Vec::with_capacity(tenants.len());
        for tenant_id in tenants {
            out.push(self.verify_tenant(tenant_id).await?);
        }
        Ok(out)
    }

    /// [`Self::walk_chain`], and a live tenant without any log reported broken: every
    /// tenant's log begins with its creation (`Tenants::provision_tenant`), so its whole log
    /// was deleted, and would start again at 1 unnoticed. A running server writes its entries
    /// behind (every 200 ms), so such a tenant is looked at again after [`UNLOGGED_GRACE`]
    /// before it is reported: one a server created just now has its log by then.
    async fn verify_tenant(&self, tenant_id: Uuid) -> Result<AuditVerification, Error> {
        let unlogged =
            |v: &AuditVerification| v.entries == 0 && v.head.is_none() && v.broken.is_none();
        let first = self.walk_chain(tenant_id).await?;
        if !unlogged(&first) || !self.tenants.is_live(tenant_id).await? {
            return Ok(first);
        }
        self.shared.clock.sleep(UNLOGGED_GRACE).await;
        let again = self.walk_chain(tenant_id).await?;
        if !unlogged(&again) || !self.tenants.is_live(tenant_id).await? {
            return Ok(again);
        }
        let reason = "the tenant has no audit log: every tenant's log begins with its \
                      creation, so the whole log was deleted";
        Ok(verification(
            tenant_id,
            None,
            0,
            Some(AuditBreak {
                tenant_id,
                seq: 1,
                entry_id: None,
                reason: reason.into(),
            }),
        ))
    }

    async fn walk_chain(&self, tenant_id: Uuid) -> Result<AuditVerification, Error> {
        self.shared.ensure_key(tenant_id).await?;
        let mut head = self.audit.head(tenant_id).await?;
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
            let batch = self.audit.chain(tenant_id, last, VERIFY_BATCH).await?;
            if batch.is_empty() {
                let now = self.audit.head(tenant_id).await?;
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
                    head = self.audit.head(tenant_id).await?;
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

/// How long `audit verify` waits before it reports a live tenant without any log.
const UNLOGGED_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

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

#[cfg(test)]
mod walking_tests {
    use super::*;

    #[test]
    fn one_walk_per_tenant_and_its_mark_goes_with_it() {
        let set = Mutex::new(HashSet::new());
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let first = Walking::start(&set, a).expect("the first walk");
        assert!(
            Walking::start(&set, a).is_none(),
            "a second walk of the same tenant waits"
        );
        assert!(
            set.lock().unwrap().contains(&a),
            "the refused walk left the first one's mark"
        );
        let other = Walking::start(&set, b).expect("another tenant walks meanwhile");
        assert!(
            Walking::start(&set, Uuid::new_v4()).is_none(),
            "at most MOST_WALKS at once"
        );
        drop(first);
        assert!(
            Walking::start(&set, a).is_some(),
            "a walk that ended, by return or by drop, leaves no mark"
        );
        drop(other);
        assert!(set.lock().unwrap().is_empty());
    }
}
