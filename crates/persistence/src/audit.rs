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

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use sea_orm::sea_query::{Expr, OnConflict, Query};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DatabaseBackend, DatabaseConnection,
    DbErr, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, SqlErr,
    TransactionTrait, Value,
};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::audit::{AppendOutcome, AuditEntry, AuditFilter, AuditHead, StoredEvent};
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::ports::AuditRepository;
use uuid::Uuid;

use crate::audit_copy::AuditWriter;
use crate::audit_rows::{LOCK_TENANT, SEQ_INDEX, micros, sqlite_time};
use crate::entity::audit_entry::{self, Column, Entity};
use crate::entity::audit_head;
use crate::repo_err;

/// Entries per `INSERT`: 11 parameters each stays well under SQLite's bound-parameter limit.
const INSERT_CHUNK: usize = 500;

/// The audit log in the `audit_log` and `audit_heads` tables.
#[derive(Clone, Debug)]
pub struct SeaOrmAuditRepository {
    db: DatabaseConnection,
    /// On a SQLite file, its writer thread, which appends (`audit_append.rs`).
    sqlite: Option<std::sync::Arc<crate::direct::DirectReads>>,
    /// On PostgreSQL, the appender thread (`audit_copy.rs`), started by the first append;
    /// `None` inside when it could not start (appends then go through SeaORM's pool).
    pg: Option<Arc<PgAppender>>,
}

/// The connection options of a PostgreSQL database and its appender thread, once started.
#[derive(Debug)]
struct PgAppender {
    options: sea_orm::sqlx::postgres::PgConnectOptions,
    writer: OnceLock<Option<AuditWriter>>,
}

impl PgAppender {
    fn writer(&self) -> Option<&AuditWriter> {
        self.writer
            .get_or_init(|| match AuditWriter::start(self.options.clone()) {
                Ok(writer) => Some(writer),
                Err(e) => {
                    tracing::error!(error = %e, "no PostgreSQL audit thread; appending through the pool");
                    None
                }
            })
            .as_ref()
    }
}

impl SeaOrmAuditRepository {
    /// Waits until every append queued on the appending thread (a SQLite file's writer,
    /// PostgreSQL's appender) before this call has run: an append whose caller left still runs
    /// (or is skipped), and a read of the head or the chain must see its outcome, or the next
    /// flush would append the same entries again (the domain settles such appends by reading
    /// the chain).
    async fn appends_settled(&self) -> Result<(), RepoError> {
        if let Some(file) = &self.sqlite {
            return file.writer().run(|_| Ok(())).await;
        }
        // Only a started appender can have appends in flight.
        match self.pg.as_ref().and_then(|pg| pg.writer.get()) {
            Some(Some(writer)) => writer.settled().await,
            _ => Ok(()),
        }
    }

    /// A repository over `db` (migrated).
    pub fn new(db: DatabaseConnection) -> Self {
        Self {
            sqlite: crate::direct::DirectReads::for_connection(&db),
            pg: (db.get_database_backend() == DatabaseBackend::Postgres).then(|| {
                Arc::new(PgAppender {
                    options: (*db.get_postgres_connection_pool().connect_options()).clone(),
                    writer: OnceLock::new(),
                })
            }),
            db,
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

/// One multi-row `INSERT` of `entries`.
fn insert_entries(
    backend: DatabaseBackend,
    entries: &[AuditEntry],
) -> Result<sea_orm::sea_query::InsertStatement, RepoError> {
    let mut insert = Query::insert();
    insert.into_table(Entity).columns([
        Column::Id,
        Column::TenantId,
        Column::Seq,
        Column::ActorType,
        Column::ActorId,
        Column::Operation,
        Column::EntityType,
        Column::EntityId,
        Column::TraceId,
        Column::CreatedAt,
        Column::Hash,
    ]);
    for entry in entries {
        let e = &entry.event;
        insert
            .values([
                Expr::value(e.id),
                Expr::value(e.tenant_id),
                Expr::value(entry.seq),
                Expr::value(e.actor_type.clone()),
                Expr::value(e.actor_id),
                Expr::value(e.operation.clone()),
                Expr::value(e.entity_type.clone()),
                Expr::value(e.entity_id.clone()),
                Expr::value(e.trace_id.clone()),
                Expr::value(timestamp(backend, e.created_at)),
                Expr::value(entry.hash.clone()),
            ])
            .map_err(|err| RepoError::Backend(Box::new(err)))?;
    }
    Ok(insert)
}

/// Whether `err` is a violation of the unique (tenant, seq) index: a row beyond the head holds
/// the place (any other uniqueness violation, a reused entry id, stays an error).
fn seq_taken(err: &DbErr) -> bool {
    match err.sql_err() {
        Some(SqlErr::UniqueConstraintViolation(what)) => {
            what.contains(SEQ_INDEX) || what.contains("audit_log.seq")
        }
        _ => false,
    }
}

#[async_trait]
impl AuditRepository for SeaOrmAuditRepository {
    async fn head(&self, tenant_id: Uuid) -> Result<Option<AuditHead>, RepoError> {
        self.appends_settled().await?;
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
        let Some(last) = entries.last() else {
            return Ok(AppendOutcome::Appended);
        };
        check_entries(tenant_id, expected, entries)?;
        if let Some(file) = &self.sqlite {
            let (expected, entries) = (expected.cloned(), entries.to_vec());
            return file
                .writer()
                .run(move |conn| {
                    crate::audit_append::append(conn, tenant_id, expected.as_ref(), &entries)
                })
                .await;
        }
        if let Some(writer) = self.pg.as_ref().and_then(|pg| pg.writer()) {
            return writer.append(tenant_id, expected.cloned(), entries).await;
        }
        let backend = self.db.get_database_backend();
        let txn = self.db.begin().await.map_err(repo_err)?;
        if backend == DatabaseBackend::Postgres {
            let locked = txn
                .query_one_raw(sea_orm::Statement::from_sql_and_values(
                    backend,
                    LOCK_TENANT,
                    [tenant_id.into()],
                ))
                .await
                .map_err(repo_err)?;
            if locked.is_none() {
                return Err(RepoError::Backend("the tenant is gone".into()));
            }
        }
        let moved = match expected {
            None => match audit_head::Entity::insert(audit_head::ActiveModel {
                tenant_id: Set(tenant_id),
                seq: Set(last.seq),
                hash: Set(last.hash.clone()),
            })
            .on_conflict(
                OnConflict::column(audit_head::Column::TenantId)
                    .do_nothing()
                    .to_owned(),
            )
            .exec_without_returning(&txn)
            .await
            {
                Ok(rows) => rows,
                Err(DbErr::RecordNotInserted) => 0,
                Err(e) => return Err(repo_err(e)),
            },
            Some(head) => {
                audit_head::Entity::update_many()
                    .col_expr(audit_head::Column::Seq, Expr::value(last.seq))
                    .col_expr(audit_head::Column::Hash, Expr::value(last.hash.clone()))
                    .filter(audit_head::Column::TenantId.eq(tenant_id))
                    .filter(audit_head::Column::Seq.eq(head.seq))
                    .filter(audit_head::Column::Hash.eq(head.hash.as_str()))
                    .exec(&txn)
                    .await
                    .map_err(repo_err)?
                    .rows_affected
            }
        };
        if moved != 1 {
            txn.rollback().await.map_err(repo_err)?;
            return Ok(AppendOutcome::HeadMoved);
        }
        for chunk in entries.chunks(INSERT_CHUNK) {
            let insert = insert_entries(backend, chunk)?;
            if let Err(e) = txn.execute(&insert).await {
                txn.rollback().await.map_err(repo_err)?;
                return if seq_taken(&e) {
                    Ok(AppendOutcome::SeqTaken)
                } else {
                    Err(repo_err(e))
                };
            }
        }
        txn.commit().await.map_err(repo_err)?;
        Ok(AppendOutcome::Appended)
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
        self.appends_settled().await?;
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
        // Tenants with a head and tenants with entries: a head row deleted behind the server's
        // back must not take its tenant out of verification.
        let mut with_head: Vec<Uuid> = audit_head::Entity::find()
            .select_only()
            .column(audit_head::Column::TenantId)
            .into_tuple()
            .all(&self.db)
            .await
            .map_err(repo_err)?;
        let with_entries: Vec<Uuid> = audit_entry::Entity::find()
            .select_only()
            .column(audit_entry::Column::TenantId)
            .distinct()
            .into_tuple()
            .all(&self.db)
            .await
            .map_err(repo_err)?;
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
