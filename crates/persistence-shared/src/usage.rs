//! Token counts and monthly activity (`token_activity`, `token_months`): what the usage report
//! and the operator's tenant summary read, and the activity flush writes. Counts run on the
//! pool; activity goes in chunks through the database's own path ([`ActivityWriter`]).

use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::{
    ColumnTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter, QuerySelect,
};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::{TypeCount, UsageRepository};
use uuid::Uuid;

use crate::backend::ActivityWriter;
use crate::engine::Database;
use crate::entity::{activity, token, token_month};
use crate::repo_error::repo_err;
use crate::rows::token::live;
use crate::stamp::unstamp;

/// Activity rows per statement (on a SQLite file: per job of the writer thread).
const ACTIVITY_CHUNK: usize = 200;

/// Token counts and activity rows.
#[derive(Clone, Debug)]
pub struct SeaOrmUsageRepository {
    db: DatabaseConnection,
    /// The database's activity writes.
    activity: Arc<dyn ActivityWriter>,
}

impl SeaOrmUsageRepository {
    /// A repository over `db` (migrated).
    pub fn new(db: Database) -> Self {
        let activity = db.backend().activity(db.connection());
        Self {
            activity,
            db: db.connection().clone(),
        }
    }
}

#[async_trait]
impl UsageRepository for SeaOrmUsageRepository {
    async fn count_by_type(
        &self,
        tenant_id: Uuid,
        now: OffsetDateTime,
    ) -> Result<Vec<TypeCount>, RepoError> {
        let rows: Vec<(String, i64, Option<OffsetDateTime>)> = token::Entity::find()
            .select_only()
            .column(token::Column::TokenType)
            .column_as(token::Column::Id.count(), "count")
            .column_as(token::Column::CreatedAt.max(), "last_created_at")
            .filter(token::Column::TenantId.eq(tenant_id))
            .filter(live(now))
            .group_by(token::Column::TokenType)
            .into_tuple()
            .all(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(rows
            .into_iter()
            .map(|(token_type, count, last_created_at)| TypeCount {
                token_type,
                count: u64::try_from(count).unwrap_or(0),
                last_created_at: last_created_at.map(unstamp),
            })
            .collect())
    }

    async fn record_activity(&self, entries: &[(Uuid, String, String)]) -> Result<(), RepoError> {
        for chunk in entries.chunks(ACTIVITY_CHUNK) {
            self.activity.insert(chunk).await?;
        }
        Ok(())
    }

    async fn count_active(&self, tenant_id: Uuid, month: &str) -> Result<u64, RepoError> {
        // Created in the month (a few counter rows, `token_months`), and recorded active in it.
        let created: i64 = token_month::Entity::find()
            .filter(token_month::Column::TenantId.eq(tenant_id))
            .filter(token_month::Column::Month.eq(month))
            .all(&self.db)
            .await
            .map_err(repo_err)?
            .iter()
            .map(|m| m.created)
            .sum();
        let recorded = activity::Entity::find()
            .filter(activity::Column::TenantId.eq(tenant_id))
            .filter(activity::Column::Month.eq(month))
            .count(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(u64::try_from(created).unwrap_or(0) + recorded)
    }
}
