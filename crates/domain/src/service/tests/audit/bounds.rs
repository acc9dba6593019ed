//! The buffer's bounds: per tenant, and for all tenants together.

use super::*;

/// The buffer bounds each tenant on its own: one tenant recording far more than the database
/// takes (here: more than the whole buffer holds) loses only its own overflow, counted; every
/// other tenant's events are kept and written.
#[tokio::test]
async fn one_tenants_flood_drops_only_its_own_events() {
    let (vault, store) = audit_vault();
    vault.audit.audit_buffer.pending().limit(10, 25);
    for i in 0..1_000 {
        record(&vault, 100, &format!("flood-{i}"));
    }
    for tenant in [200, 300] {
        for i in 0..3 {
            record(&vault, tenant, &format!("calm-{i}"));
        }
    }
    assert_eq!(vault.audit.flush_audit().await.unwrap(), 16);
    let written = written_by(&store);
    let of = |tenant: u128| {
        written
            .iter()
            .filter(|(t, _, _)| *t == Uuid::from_u128(tenant))
            .map(|(_, _, id)| id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        of(100),
        (0..10).map(|i| format!("flood-{i}")).collect::<Vec<_>>()
    );
    assert_eq!(of(200), ["calm-0", "calm-1", "calm-2"]);
    assert_eq!(of(300), ["calm-0", "calm-1", "calm-2"]);
}

/// Many tenants flooding at once fill the whole buffer: a tenant holding less than the others
/// still gets its events in, in place of the newest events of the tenant holding the most.
#[tokio::test]
async fn a_full_buffer_makes_room_from_the_tenant_holding_the_most() {
    let (vault, store) = audit_vault();
    vault.audit.audit_buffer.pending().limit(10, 25);
    for tenant in [100, 101, 102] {
        for i in 0..20 {
            record(&vault, tenant, &format!("flood-{i}"));
        }
    }
    record(&vault, 200, "calm");
    assert_eq!(vault.audit.audit_backlog(), 25);
    assert_eq!(vault.audit.flush_audit().await.unwrap(), 25);
    let written = written_by(&store);
    let count = |tenant: u128| {
        written
            .iter()
            .filter(|(t, _, _)| *t == Uuid::from_u128(tenant))
            .count()
    };
    assert_eq!(count(200), 1, "the calm tenant's event is kept");
    for tenant in [100, 101, 102] {
        assert!(count(tenant) >= 7, "{tenant}: {}", count(tenant));
    }
}
