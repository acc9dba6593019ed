//! The audit log, by concern: the chain and its verification (`verify`), the buffer's bounds
//! (`bounds`), flushes that fail, hang or are dropped half-way (`flush`), and the requests that
//! wait for room while their tenant's log is behind (`room`). Here: the fakes
//! and helpers they share.

use std::hash::{Hash, Hasher};

use super::*;

fn mac_cipher() -> MockCiph {
    let mut c = MockCiph::new();
    c.expect_has_tenant_key().return_const(true);
    c.expect_fingerprint().returning(|tenant, input| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        tenant.hash(&mut h);
        input.hash(&mut h);
        Ok(format!("{:016x}", h.finish()))
    });
    c
}

/// A live tenant with a data key and no audit log at all.
const UNLOGGED: uuid::Uuid = uuid::Uuid::from_u128(0xdead);

fn audit_vault() -> (Vault, Arc<NoAudit>) {
    let store = Arc::new(NoAudit::default());
    (vault_over(store.clone()), store)
}

fn vault_over(audit: Arc<dyn AuditRepository>) -> Vault {
    let mut tenants = MockTenants::new();
    tenants
        .expect_get()
        .returning(|id| Ok(Some(super::tenant_row(id))));
    tenants.expect_is_live().returning(|_| Ok(true));
    // One live tenant the log knows nothing of (`verify.rs`).
    tenants
        .expect_data_keys()
        .returning(|| Ok(vec![(UNLOGGED, vec![1])]));
    let mut p = ports(tenants, MockApplications::new());
    p.cipher = Arc::new(mac_cipher());
    p.audit = audit;
    Vault::new(p)
}

async fn recorded(vault: &Vault, n: usize) {
    let mut caller = principal(&[Permission::LogRead]);
    caller.trace_id = Some("trace-1".into());
    for i in 0..n {
        vault
            .tokens
            .shared
            .audit(&caller, "create", "token", [format!("tok-{i}")]);
    }
    assert_eq!(vault.audit.flush_audit().await.unwrap(), n);
}

async fn first_break(vault: &Vault) -> Option<crate::audit::AuditBreak> {
    let mut results = vault
        .audit
        .verify_audit(Some(Uuid::from_u128(100)))
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
    results.remove(0).broken
}

fn record(vault: &Vault, tenant: u128, id: &str) {
    let mut caller = principal(&[Permission::LogRead]);
    caller.tenant_id = Uuid::from_u128(tenant);
    vault.tokens.shared.audit(&caller, "create", "token", [id]);
}

fn written_by(store: &NoAudit) -> Vec<(Uuid, i64, String)> {
    store
        .entries
        .lock()
        .unwrap()
        .iter()
        .map(|e| (e.event.tenant_id, e.seq, e.event.entity_id.clone()))
        .collect()
}

mod bounds;
mod flush;
mod room;
mod verify;
