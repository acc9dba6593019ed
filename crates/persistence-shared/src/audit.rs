//! [`AuditRepository`] on SeaORM, in the `audit_log` and `audit_heads` tables.
//!
//! An append is one transaction that moves the tenant's head first (a conditional `UPDATE`, or
//! `INSERT … ON CONFLICT DO NOTHING` for a tenant's first entries) and then inserts the
//! entries. Moving the head first is deliberate: on PostgreSQL the head row's lock serializes
//! concurrent appenders (other server instances), the loser re-evaluating its `WHERE` against
//! the winner's head and matching nothing (`HeadMoved`); on SQLite a write as the transaction's
//! first statement takes the write lock at once, where a read first would need a lock upgrade
//! that can fail with `SQLITE_BUSY` instead of waiting. The unique (tenant, seq) index backs
//! this up. Once the head has moved, no other appender can be racing for the places after it,
//! so an entry that meets a taken (tenant, seq) meets a row beyond the head that no append
//! wrote: `SeqTaken`, the chain is broken (trying again would meet it again).
//!
//! `created_at` is stored in UTC at microsecond precision. On SQLite, where timestamps are text
//! and compare as text, it is written (and compared) with exactly six fractional digits: the
//! driver's own RFC 3339 text drops trailing zeros, and `…05Z` would then sort after
//! `…05.5Z`.

use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::{
    ColumnTrait, Condition, DatabaseBackend, DatabaseConnection, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect, Value,
};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::audit::{AppendOutcome, AuditEntry, AuditFilter, AuditHead, StoredEvent};
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::ports::AuditRepository;
use uuid::Uuid;

use crate::backend::{AuditAppender, Backend};
use crate::engine::Database;
use crate::entity::audit_entry::{self, Column, Entity};
use crate::entity::audit_head;
use crate::repo_error::repo_err;
use crate::rows::audit_entry::{micros, sqlite_time};

/// The audit log in the `audit_log` and `audit_heads` tables.
#[derive(Clone, Debug)]
pub struct SeaOrmAuditRepository {
    db: DatabaseConnection,
    /// The database's appending thread.
    appender: Arc<dyn AuditAppender>,
    /// The database's backend (verification spans tenants its way).
    backend: Arc<dyn Backend>,
}

impl SeaOrmAuditRepository {
    /// A repository over `db` (migrated).
    pub fn new(db: Database) -> Self {
        let appender = db.backend().audit();
        Self {
            backend: db.backend().clone(),
            appender,
            db: db.connection().clone(),
        }
    }
}

/// `t` as `created_at` is stored: UTC, whole microseconds; on SQLite fixed-width text.
fn timestamp(backend: DatabaseBackend, t: OffsetDateTime) -> Value {
    if backend == DatabaseBackend::Sqlite {
        Value::from(sqlite_time(t))
    } else {
        Value::from(micros(t))
    }
}

fn to_domain(m: audit_entry::Model) -> AuditEntry {
    AuditEntry {
        event: StoredEvent {
            id: m.id,
            tenant_id: m.tenant_id,
            actor_type: m.actor_type,
            actor_id: m.actor_id,
            operation: m.operation,
            entity_type: m.entity_type,
            entity_id: m.entity_id,
            trace_id: m.trace_id,
            created_at: m.created_at,
        },
        seq: m.seq,
        hash: m.hash,
    }
}

/// Refuses entries that would fork or mislabel the chain: each must be the tenant's and follow
/// the one before it, the first following `expected`.
fn check_entries(
    tenant_id: Uuid,
    expected: Option<&AuditHead>,
    entries: &[AuditEntry],
) -> Result<(), RepoError> {
    let mut previous = expected.map_or(0, |h| h.seq);
    for e in entries {
        if e.event.tenant_id != tenant_id {
            return Err(RepoError::Backend(
                format!("audit entry {} is not of tenant {tenant_id}", e.event.id).into(),
            ));
        }
        if e.seq != previous + 1 {
            return Err(RepoError::Backend(
                format!(
                    "audit entry {} has seq {} where {} follows",
                    e.event.id,
                    e.seq,
                    previous + 1
                )
                .into(),
            ));
        }
        previous = e.seq;
    }
    Ok(())
}

#[async_trait]
impl AuditRepository for SeaOrmAuditRepository {
    async fn head(&self, tenant_id: Uuid) -> Result<Option<AuditHead>, RepoError> {
        self.appender.settled().await?;
        Ok(audit_head::Entity::find_by_id(tenant_id)
            .one(&self.db)
            .await
            .map_err(repo_err)?
            .map(|m| AuditHead {
                seq: m.seq,
                hash: m.hash,
            }))
    }

    async fn append(
        &self,
        tenant_id: Uuid,
        expected: Option<&AuditHead>,
        entries: &[AuditEntry],
    ) -> Result<AppendOutcome, RepoError> {
        if entries.is_empty() {
            return Ok(AppendOutcome::Appended);
        }
        check_entries(tenant_id, expected, entries)?;
        self.appender.append(tenant_id, expected, entries).await
    }

    async fn list(
        &self,
        tenant_id: Uuid,
        filter: &AuditFilter,
        page: PageRequest,
    ) -> Result<Page<AuditEntry>, RepoError> {
        let backend = self.db.get_database_backend();
        let mut condition = Condition::all().add(Column::TenantId.eq(tenant_id));
        if let Some(entity_type) = &filter.entity_type {
            condition = condition.add(Column::EntityType.eq(entity_type.as_str()));
        }
        if let Some(entity_id) = &filter.entity_id {
            condition = condition.add(Column::EntityId.eq(entity_id.as_str()));
        }
        if let Some(start) = filter.start {
            condition = condition.add(Column::CreatedAt.gte(timestamp(backend, start)));
        }
        if let Some(end) = filter.end {
            condition = condition.add(Column::CreatedAt.lte(timestamp(backend, end)));
        }
        let query = Entity::find().filter(condition);
        let total_items = query.clone().count(&self.db).await.map_err(repo_err)?;
        let items = query
            .order_by_desc(Column::CreatedAt)
            .order_by_desc(Column::Seq)
            .offset(page.offset())
            .limit(page.size)
            .all(&self.db)
            .await
            .map_err(repo_err)?
            .into_iter()
            .map(to_domain)
            .collect();
        Ok(Page {
            items,
            total_items,
            request: page,
        })
    }

    async fn chain(
        &self,
        tenant_id: Uuid,
        after: i64,
        limit: u64,
    ) -> Result<Vec<AuditEntry>, RepoError> {
        self.appender.settled().await?;
        Ok(Entity::find()
            .filter(Column::TenantId.eq(tenant_id))
            .filter(Column::Seq.gt(after))
            .order_by_asc(Column::Seq)
            .limit(limit)
            .all(&self.db)
            .await
            .map_err(repo_err)?
            .into_iter()
            .map(to_domain)
            .collect())
    }

    async fn tenants(&self) -> Result<Vec<Uuid>, RepoError> {
        // Spans tenants on purpose (`audit verify` checks every tenant): on Citus two reads
        // over every shard, allowed in a transaction of their own (`Backend::spanning_tenants`).
        let txn = self
            .backend
            .spanning_tenants(&self.db)
            .await
            .map_err(repo_err)?;
        // Tenants with a head and tenants with entries: a head row deleted behind the server's
        // back must not take its tenant out of verification.
        let mut with_head: Vec<Uuid> = audit_head::Entity::find()
            .select_only()
            .column(audit_head::Column::TenantId)
            .into_tuple()
            .all(&txn)
            .await
            .map_err(repo_err)?;
        let with_entries: Vec<Uuid> = audit_entry::Entity::find()
            .select_only()
            .column(audit_entry::Column::TenantId)
            .distinct()
            .into_tuple()
            .all(&txn)
            .await
            .map_err(repo_err)?;
        txn.commit().await.map_err(repo_err)?;
        // A deleted tenant's log is being purged with the rest of it: not verified.
        let deleted: Vec<Uuid> = crate::entity::tenant::Entity::find()
            .filter(crate::entity::tenant::Column::DeletedAt.is_not_null())
            .select_only()
            .column(crate::entity::tenant::Column::Id)
            .into_tuple()
            .all(&self.db)
            .await
            .map_err(repo_err)?;
        with_head.extend(with_entries);
        with_head.retain(|t| !deleted.contains(t));
        with_head.sort_unstable();
        with_head.dedup();
        Ok(with_head)
    }
}
