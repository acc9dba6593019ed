//! Audit repository contract: the same stories on SQLite and PostgreSQL, fresh database each.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use sea_orm::DatabaseConnection;
use time::{Duration, OffsetDateTime};
use tokenvault_domain::audit::{AuditEntry, AuditHead, StoredEvent};
use tokenvault_domain::ports::AuditRepository;
use tokenvault_persistence::testing::{TestDatabase, backends};
use tokenvault_persistence::{SeaOrmAuditRepository, SeaOrmTenantRepository};
use uuid::Uuid;

mod appends;
#[path = "../common/mod.rs"]
mod common;
mod lists;
mod places;
mod tenant_delete;

use common::{now, tenant};

struct Repos {
    db: DatabaseConnection,
    tenants: SeaOrmTenantRepository,
    audit: SeaOrmAuditRepository,
    tenant: Uuid,
}

async fn each_backend<F, Fut>(story: F)
where
    F: Fn(Repos) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for backend in backends() {
        let db = TestDatabase::create(backend).await;
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let tenant = tenant(&tenants).await;
        story(Repos {
            db: db.db.connection().clone(),
            tenants,
            audit: SeaOrmAuditRepository::new(db.db.clone()),
            tenant,
        })
        .await;
        db.destroy().await;
    }
}

/// Entry `seq` of `tenant_id`'s chain: a token created by an application at `created_at`.
fn entry(tenant_id: Uuid, seq: i64, created_at: OffsetDateTime) -> AuditEntry {
    AuditEntry {
        event: StoredEvent {
            id: Uuid::now_v7(),
            tenant_id,
            actor_type: "application".into(),
            actor_id: Some(Uuid::now_v7()),
            operation: "create".into(),
            entity_type: "token".into(),
            entity_id: format!("tok-{seq}"),
            trace_id: Some(format!("trace-{seq}")),
            created_at,
        },
        seq,
        hash: format!("h{seq}"),
    }
}

/// Entries `from..=to` of `tenant_id`'s chain, a millisecond apart.
fn entries(tenant_id: Uuid, from: i64, to: i64) -> Vec<AuditEntry> {
    let t = now();
    (from..=to)
        .map(|seq| entry(tenant_id, seq, t + Duration::milliseconds(seq)))
        .collect()
}

fn head_of(entries: &[AuditEntry]) -> AuditHead {
    let last = entries.last().unwrap();
    AuditHead {
        seq: last.seq,
        hash: last.hash.clone(),
    }
}

async fn whole_chain(audit: &SeaOrmAuditRepository, tenant_id: Uuid) -> Vec<AuditEntry> {
    audit.chain(tenant_id, 0, 1_000_000).await.unwrap()
}

fn seqs(entries: &[AuditEntry]) -> Vec<i64> {
    entries.iter().map(|e| e.seq).collect()
}
