//! Token counts and monthly activity (`token_activity`, `token_months`): what the usage report
//! and the operator's tenant summary read, and the activity flush writes. Counts run on the
//! pool; activity goes in chunks through the backend's own path (`activity_rows.rs`).

use async_trait::async_trait;
use sea_orm::{
    ColumnTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter, QuerySelect,
};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::{TypeCount, UsageRepository};
use uuid::Uuid;

use crate::activity_rows;
use crate::engine::{Database, Engine};
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
    /// The backend's writer threads (`engine.rs`): a SQLite file's activity goes through its
    /// writer.
    engine: Engine,
    /// A Citus database (`Database::distributed`): activity is written tenant by tenant.
    distributed: bool,
}

impl SeaOrmUsageRepository {
    /// A repository over `db` (migrated).
    pub fn new(db: Database) -> Self {
        Self {
            distributed: db.reads().distributed(),
            engine: db.engine(),
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
            match &self.engine {
                // On a SQLite file a job of the writer thread per chunk, between token groups.
                Engine::Sqlite(file) => {
                    let chunk = chunk.to_vec();
                    file.writer()
                        .run(move |conn| activity_rows::insert_on_writer(conn, &chunk))
                        .await?;
                }
                Engine::Postgres(_) => {
                    activity_rows::insert_postgres(&self.db, chunk, self.distributed).await?;
                }
            }
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
