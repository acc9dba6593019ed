//! [`TenantRepository`] on SeaORM.

use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect, TransactionTrait,
};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::application::{Application, KeyHash};
use tokenvault_domain::ports::{TenantKeys, TenantRepository};
use tokenvault_domain::tenant::Tenant;
use uuid::Uuid;

use crate::backend::{Backend, TenantReads};
use crate::engine::Database;
use crate::entity::{application, tenant};
use crate::repo_error::repo_err;
use crate::rows::application::to_active;
use crate::rows::tenant::to_domain;
use crate::stamp::stamp;

/// The live tenant `id` through SeaORM on `db`.
pub async fn by_id(db: &impl ConnectionTrait, id: Uuid) -> Result<Option<Tenant>, RepoError> {
    Ok(tenant::Entity::find_by_id(id)
        .filter(tenant::Column::DeletedAt.is_null())
        .one(db)
        .await
        .map_err(repo_err)?
        .map(to_domain))
}

/// Tenants in the `tenants` table; a deleted one is a tombstone until its rows are purged
/// (`tenant_purge.rs`).
#[derive(Clone, Debug)]
pub struct SeaOrmTenantRepository {
    db: DatabaseConnection,
    /// The database's own reads.
    reads: Arc<dyn TenantReads>,
    /// Told of every change of a tenant's settings or life (`Backend::keys_changed`).
    backend: Arc<dyn Backend>,
}

impl SeaOrmTenantRepository {
    /// A repository over `db` (migrated).
    pub fn new(db: Database) -> Self {
        let reads = db.backend().tenants(db.connection());
        Self {
            reads,
            backend: db.backend().clone(),
            db: db.connection().clone(),
        }
    }

    /// How many deleted tenants are still being purged (tests wait for none).
    ///
    /// # Errors
    /// A storage failure.
    #[cfg(feature = "test-support")]
    pub async fn deleted_count(&self) -> Result<u64, RepoError> {
        use sea_orm::PaginatorTrait as _;
        tenant::Entity::find()
            .filter(tenant::Column::DeletedAt.is_not_null())
            .count(&self.db)
            .await
            .map_err(repo_err)
    }
}

#[async_trait]
impl TenantRepository for SeaOrmTenantRepository {
    async fn create_with_application(
        &self,
        tenant: &Tenant,
        wrapped_data_key: &[u8],
        application: &Application,
        key_hash: &KeyHash,
    ) -> Result<(), RepoError> {
        let txn = self.db.begin().await.map_err(repo_err)?;
        tenant::Entity::insert(tenant::ActiveModel {
            id: Set(tenant.id),
            owner_id: Set(tenant.owner_id),
            name: Set(tenant.name.clone()),
            fingerprint_tokens: Set(tenant.settings.fingerprint_tokens),
            deduplicate_tokens: Set(tenant.settings.deduplicate_tokens),
            created_by: Set(tenant.created_by),
            created_at: Set(stamp(tenant.created_at)),
            modified_by: Set(tenant.modified_by),
            modified_at: Set(tenant.modified_at.map(stamp)),
            data_key: Set(Some(wrapped_data_key.to_vec())),
            deleted_at: Set(None),
        })
        .exec_without_returning(&txn)
        .await
        .map_err(repo_err)?;
        application::Entity::insert(to_active(application, key_hash))
            .exec_without_returning(&txn)
            .await
            .map_err(repo_err)?;
        txn.commit().await.map_err(repo_err)
    }

    async fn get(&self, id: Uuid) -> Result<Option<Tenant>, RepoError> {
        self.reads.by_id(id).await
    }

    async fn update(&self, tenant: &Tenant) -> Result<bool, RepoError> {
        let result = tenant::Entity::update_many()
            .col_expr(tenant::Column::Name, Expr::value(tenant.name.clone()))
            .col_expr(
                tenant::Column::FingerprintTokens,
                Expr::value(tenant.settings.fingerprint_tokens),
            )
            .col_expr(
                tenant::Column::DeduplicateTokens,
                Expr::value(tenant.settings.deduplicate_tokens),
            )
            .col_expr(tenant::Column::ModifiedBy, Expr::value(tenant.modified_by))
            .col_expr(
                tenant::Column::ModifiedAt,
                Expr::value(tenant.modified_at.map(stamp)),
            )
            .filter(tenant::Column::Id.eq(tenant.id))
            .filter(tenant::Column::DeletedAt.is_null())
            .exec(&self.db)
            .await;
        // Committed or not (an error may come after the commit), the settings a key's read
        // returns may have changed.
        self.backend.keys_changed();
        Ok(result.map_err(repo_err)?.rows_affected > 0)
    }

    async fn delete(&self, id: Uuid, at: OffsetDateTime) -> Result<bool, RepoError> {
        let retired = crate::tenant_purge::retire(&self.db, id, at).await;
        // The tenant's keys stop working: forgotten, whatever the answer.
        self.backend.keys_changed();
        retired
    }

    async fn purge_deleted(&self, batch: u64) -> Result<u64, RepoError> {
        crate::tenant_purge::purge_batch(&self.db, batch).await
    }

    async fn any(&self) -> Result<bool, RepoError> {
        let found: Option<Uuid> = tenant::Entity::find()
            .filter(tenant::Column::DeletedAt.is_null())
            .select_only()
            .column(tenant::Column::Id)
            .limit(1)
            .into_tuple()
            .one(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(found.is_some())
    }

    async fn list(&self) -> Result<Vec<Tenant>, RepoError> {
        Ok(tenant::Entity::find()
            .filter(tenant::Column::DeletedAt.is_null())
            .order_by_asc(tenant::Column::CreatedAt)
            .order_by_asc(tenant::Column::Id)
            .all(&self.db)
            .await
            .map_err(repo_err)?
            .into_iter()
            .map(to_domain)
            .collect())
    }
}

#[async_trait]
impl TenantKeys for SeaOrmTenantRepository {
    async fn data_key(&self, id: Uuid) -> Result<Option<Vec<u8>>, RepoError> {
        let found: Option<Option<Vec<u8>>> = tenant::Entity::find_by_id(id)
            .filter(tenant::Column::DeletedAt.is_null())
            .select_only()
            .column(tenant::Column::DataKey)
            .into_tuple()
            .one(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(found.flatten())
    }

    async fn data_keys(&self) -> Result<Vec<(Uuid, Vec<u8>)>, RepoError> {
        let rows: Vec<(Uuid, Option<Vec<u8>>)> = tenant::Entity::find()
            .filter(tenant::Column::DeletedAt.is_null())
            .select_only()
            .column(tenant::Column::Id)
            .column(tenant::Column::DataKey)
            .into_tuple()
            .all(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(rows
            .into_iter()
            .filter_map(|(id, k)| k.map(|k| (id, k)))
            .collect())
    }

    async fn replace_data_key(&self, id: Uuid, old: &[u8], new: &[u8]) -> Result<bool, RepoError> {
        let mut update = tenant::Entity::update_many()
            .col_expr(tenant::Column::DataKey, Expr::value(new.to_vec()))
            .filter(tenant::Column::Id.eq(id))
            .filter(tenant::Column::DeletedAt.is_null());
        update = if old.is_empty() {
            update.filter(tenant::Column::DataKey.is_null())
        } else {
            update.filter(tenant::Column::DataKey.eq(old.to_vec()))
        };
        let result = update.exec(&self.db).await.map_err(repo_err)?;
        Ok(result.rows_affected > 0)
    }

    async fn is_live(&self, id: Uuid) -> Result<bool, RepoError> {
        let found: Option<Uuid> = tenant::Entity::find_by_id(id)
            .filter(tenant::Column::DeletedAt.is_null())
            .select_only()
            .column(tenant::Column::Id)
            .into_tuple()
            .one(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(found.is_some())
    }
}
