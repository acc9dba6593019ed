//! [`IdempotencyRepository`] on SeaORM, in the `idempotency_keys` table. A claim is atomic
//! without a transaction: an expired record is deleted, then `INSERT … ON CONFLICT DO NOTHING`
//! decides who holds the key (the primary key (application, key) arbitrates between
//! concurrent callers and server instances); a caller that did not insert reads what holds it.

use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, DatabaseConnection, DbErr, EntityTrait, QueryFilter,
};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::{Claim, IdempotencyKey, IdempotencyRepository};

use crate::backend::Backend;
use crate::engine::Database;
use crate::entity::idempotency::{self, Column, Entity};
use crate::repo_error::repo_err;
use crate::stamp::stamp;

/// How many times a claim starts over when the record it lost to vanished before it could be
/// read (released or expired concurrently).
const CLAIM_ATTEMPTS: usize = 3;

/// Idempotency records in the `idempotency_keys` table.
#[derive(Clone, Debug)]
pub struct SeaOrmIdempotencyRepository {
    db: DatabaseConnection,
    /// The database's backend (a sweep spans tenants its way).
    backend: Arc<dyn Backend>,
}

impl SeaOrmIdempotencyRepository {
    /// A repository over `db` (migrated).
    pub fn new(db: Database) -> Self {
        Self {
            backend: db.backend().clone(),
            db: db.connection().clone(),
        }
    }

    /// One claim attempt; `None` when the conflicting record vanished before it was read.
    async fn try_claim(
        &self,
        key: &IdempotencyKey,
        fingerprint: &[u8],
        now: OffsetDateTime,
        expired_before: OffsetDateTime,
        stale_before: OffsetDateTime,
    ) -> Result<Option<Claim>, RepoError> {
        Entity::delete_many()
            .filter(Column::TenantId.eq(key.tenant_id))
            .filter(Column::ApplicationId.eq(key.application_id))
            .filter(Column::Key.eq(key.key.as_str()))
            .filter(
                Condition::any()
                    .add(Column::CreatedAt.lt(stamp(expired_before)))
                    .add(
                        Condition::all()
                            .add(Column::Response.is_null())
                            .add(Column::CreatedAt.lt(stamp(stale_before))),
                    ),
            )
            .exec(&self.db)
            .await
            .map_err(repo_err)?;
        let row = idempotency::ActiveModel {
            tenant_id: Set(key.tenant_id),
            application_id: Set(key.application_id),
            key: Set(key.key.clone()),
            fingerprint: Set(fingerprint.to_vec()),
            response: Set(None),
            created_at: Set(stamp(now)),
        };
        let inserted = match Entity::insert(row)
            .on_conflict(
                // The key's only unique index: its primary key, which starts with the tenant
                // on PostgreSQL (migration 14) and not on SQLite.
                OnConflict::new().do_nothing().to_owned(),
            )
            .exec_without_returning(&self.db)
            .await
        {
            Ok(rows) => rows > 0,
            Err(DbErr::RecordNotInserted) => false,
            Err(e) => return Err(repo_err(e)),
        };
        if inserted {
            return Ok(Some(Claim::Claimed));
        }
        let found = Entity::find()
            .filter(Column::TenantId.eq(key.tenant_id))
            .filter(Column::ApplicationId.eq(key.application_id))
            .filter(Column::Key.eq(key.key.as_str()))
            .one(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(found.map(|m| match m.response {
            None => Claim::InFlight {
                fingerprint: m.fingerprint,
            },
            Some(response) => Claim::Done {
                fingerprint: m.fingerprint,
                response,
            },
        }))
    }
}

#[async_trait]
impl IdempotencyRepository for SeaOrmIdempotencyRepository {
    async fn claim(
        &self,
        key: &IdempotencyKey,
        fingerprint: &[u8],
        now: OffsetDateTime,
        expired_before: OffsetDateTime,
        stale_before: OffsetDateTime,
    ) -> Result<Claim, RepoError> {
        for _ in 0..CLAIM_ATTEMPTS {
            if let Some(claim) = self
                .try_claim(key, fingerprint, now, expired_before, stale_before)
                .await?
            {
                return Ok(claim);
            }
        }
        Err(RepoError::Backend(
            format!(
                "idempotency key of application {} keeps changing under the claim",
                key.application_id
            )
            .into(),
        ))
    }

    async fn complete(&self, key: &IdempotencyKey, response: &[u8]) -> Result<(), RepoError> {
        Entity::update_many()
            .col_expr(Column::Response, Expr::value(response.to_vec()))
            .filter(Column::TenantId.eq(key.tenant_id))
            .filter(Column::ApplicationId.eq(key.application_id))
            .filter(Column::Key.eq(key.key.as_str()))
            .exec(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(())
    }

    async fn delete_expired(&self, expired_before: OffsetDateTime) -> Result<u64, RepoError> {
        // Spans tenants on purpose (the sweep of old records): on Citus one `DELETE` over
        // every shard, allowed in a transaction of its own.
        let txn = self
            .backend
            .spanning_tenants(&self.db)
            .await
            .map_err(repo_err)?;
        let result = Entity::delete_many()
            .filter(Column::CreatedAt.lt(stamp(expired_before)))
            .exec(&txn)
            .await
            .map_err(repo_err)?;
        txn.commit().await.map_err(repo_err)?;
        Ok(result.rows_affected)
    }

    async fn release(&self, key: &IdempotencyKey) -> Result<(), RepoError> {
        Entity::delete_many()
            .filter(Column::TenantId.eq(key.tenant_id))
            .filter(Column::ApplicationId.eq(key.application_id))
            .filter(Column::Key.eq(key.key.as_str()))
            .filter(Column::Response.is_null())
            .exec(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(())
    }
}
