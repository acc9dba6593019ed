//! [`ApplicationRepository`] on SeaORM.

use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::application::{Application, KeyHash};
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::permission::ApplicationType;
use tokenvault_domain::ports::{
    ApplicationRepository, KeyedReactor, KeyedSearch, KeyedToken, SearchCondition,
};
use tokenvault_domain::tenant::TenantSettings;
use uuid::Uuid;

use crate::direct::DirectReads;
use crate::engine::Database;
use crate::entity::application::{Column, Entity};
use crate::paging::newest_first;
use crate::pg_key_group::KeyGroup;
use crate::reads::Reads;
use crate::repo_error::repo_err;
use crate::rows::application::{hash_hex, to_active, to_domain};
use crate::stamp::stamp;
use crate::{grants, keyed_reactor, keyed_read, keyed_search};

/// Applications in the `applications` table.
#[derive(Clone, Debug)]
pub struct SeaOrmApplicationRepository {
    db: DatabaseConnection,
    /// SQLite's point reads on the calling thread (`direct.rs`); `None` on PostgreSQL.
    direct: Option<Arc<DirectReads>>,
    /// Point reads (`reads.rs`: on PostgreSQL the adapter's own connections).
    reads: Reads,
    /// PostgreSQL's key-and-token reads, answered together (`pg_key_group.rs`).
    key_group: Option<Arc<KeyGroup>>,
}

impl SeaOrmApplicationRepository {
    /// A repository over `db` (migrated).
    pub fn new(db: Database) -> Self {
        Self {
            key_group: db.key_group(),
            direct: db.sqlite(),
            reads: db.reads(),
            db: db.connection().clone(),
        }
    }
}

#[async_trait]
impl ApplicationRepository for SeaOrmApplicationRepository {
    async fn insert(&self, application: &Application, key_hash: &KeyHash) -> Result<(), RepoError> {
        Entity::insert(to_active(application, key_hash))
            .exec_without_returning(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(())
    }

    async fn find_by_key_hash(
        &self,
        hash: &KeyHash,
    ) -> Result<Option<(Application, TenantSettings)>, RepoError> {
        if let Some(pg) = self.reads.pg() {
            return keyed_read::key_postgres(pg, hash_hex(hash)).await;
        }
        if let Some(found) = self
            .direct
            .as_ref()
            .and_then(|d| d.application_by_key(&hash_hex(hash)))
        {
            return found;
        }
        let query = Entity::find()
            .filter(Column::KeyHash.eq(hash_hex(hash)))
            .find_also_related(crate::entity::tenant::Entity)
            // A deleted tenant's keys stop at once, whatever is left of its rows.
            .filter(crate::entity::tenant::Column::DeletedAt.is_null());
        let found = query.one(&self.reads).await.map_err(repo_err)?;
        match found {
            Some((app, Some(tenant))) => Ok(Some((
                to_domain(app)?,
                crate::rows::tenant::to_domain(tenant).settings,
            ))),
            _ => Ok(None),
        }
    }

    async fn find_by_key_hash_with_token(
        &self,
        hash: &KeyHash,
        token_id: &str,
        now: OffsetDateTime,
    ) -> Result<Option<KeyedToken>, RepoError> {
        if let Some(group) = &self.key_group {
            return group.read(hash_hex(hash), token_id, now).await;
        }
        // SQLite: one statement on the calling thread when the file allows (`direct.rs`).
        if let Some(found) = self
            .direct
            .as_ref()
            .and_then(|d| d.key_and_token(&hash_hex(hash), token_id, now))
        {
            return Ok(found?.map(|(application, settings, token)| KeyedToken {
                application,
                settings,
                token,
            }));
        }
        // Else two point reads through SeaORM.
        let Some((application, settings)) = self.find_by_key_hash(hash).await? else {
            return Ok(None);
        };
        // Only a private application may read tokens (decisions §4): no other key makes the
        // server read one.
        let token = if application.app_type != ApplicationType::Private {
            None
        } else if let Some(found) = self
            .direct
            .as_ref()
            .and_then(|d| d.live_token(application.tenant_id, token_id, now))
        {
            found?
        } else {
            crate::token_queries::live_token(&self.reads, application.tenant_id, token_id, now)
                .await?
        };
        Ok(Some(KeyedToken {
            application,
            settings,
            token,
        }))
    }

    async fn find_by_key_hash_with_search(
        &self,
        hash: &KeyHash,
        tenant_id: Uuid,
        condition: &SearchCondition,
        limit: u64,
        now: OffsetDateTime,
    ) -> Result<Option<KeyedSearch>, RepoError> {
        if let Some(pg) = self.reads.pg_joined() {
            return keyed_search::key_and_search(
                pg,
                hash_hex(hash),
                tenant_id,
                condition,
                limit,
                now,
            )
            .await;
        }
        // SQLite reads a key and a page on the calling thread, each a few microseconds
        // (`direct.rs`): nothing to join. Citus: the key alone; the use case then searches the
        // tenant's tokens by its id.
        Ok(self
            .find_by_key_hash(hash)
            .await?
            .map(|(application, settings)| KeyedSearch {
                application,
                settings,
                tokens: None,
            }))
    }

    async fn find_by_key_hash_with_reactor(
        &self,
        hash: &KeyHash,
        reactor_id: Uuid,
        token_id: Option<String>,
        now: OffsetDateTime,
    ) -> Result<Option<KeyedReactor>, RepoError> {
        let token_id = token_id.as_deref();
        if let Some(pg) = self.reads.pg_joined() {
            return keyed_reactor::key_and_reactor_postgres(
                pg,
                hash_hex(hash),
                reactor_id,
                token_id,
                now,
            )
            .await;
        }
        // SQLite: the same join on the calling thread (`direct.rs`); point reads through the
        // pool when the file was locked.
        if let Some(found) = self.direct.as_deref().and_then(|d| {
            keyed_reactor::key_and_reactor_sqlite(d, &hash_hex(hash), reactor_id, token_id, now)
        }) {
            return found;
        }
        let Some((application, settings)) = self.find_by_key_hash(hash).await? else {
            return Ok(None);
        };
        // Only a private application may use tokens (decisions §4): no other key makes the
        // server read a reactor or a token.
        if application.app_type != ApplicationType::Private {
            return Ok(Some(KeyedReactor {
                application,
                settings,
                reactor: None,
                token: None,
            }));
        }
        let reactor = keyed_reactor::reactor_and_formula(
            self.direct.as_deref(),
            &self.reads,
            application.tenant_id,
            reactor_id,
        )
        .await?;
        let token = match token_id {
            Some(id) => {
                crate::token_queries::live_token(&self.reads, application.tenant_id, id, now)
                    .await?
            }
            None => None,
        };
        Ok(Some(KeyedReactor {
            application,
            settings,
            reactor,
            token,
        }))
    }

    async fn get(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Application>, RepoError> {
        if let Some(found) = self
            .direct
            .as_ref()
            .and_then(|d| d.application(tenant_id, id))
        {
            return found;
        }
        Entity::find()
            .filter(Column::TenantId.eq(tenant_id))
            .filter(Column::Id.eq(id))
            .one(&self.reads)
            .await
            .map_err(repo_err)?
            .map(to_domain)
            .transpose()
    }

    async fn list(
        &self,
        tenant_id: Uuid,
        ids: &[Uuid],
        page: PageRequest,
    ) -> Result<Page<Application>, RepoError> {
        let mut query = Entity::find().filter(Column::TenantId.eq(tenant_id));
        if !ids.is_empty() {
            query = query.filter(Column::Id.is_in(ids.iter().copied()));
        }
        newest_first(
            &self.db,
            query,
            (Column::CreatedAt, Column::Id),
            page,
            to_domain,
        )
        .await
    }

    async fn update(&self, application: &Application) -> Result<bool, RepoError> {
        let result = Entity::update_many()
            .col_expr(Column::Name, Expr::value(application.name.clone()))
            .col_expr(
                Column::Permissions,
                Expr::value(grants::permissions_json(&application.permissions)),
            )
            .col_expr(
                Column::Rules,
                Expr::value(grants::rules_json(&application.rules)),
            )
            .col_expr(Column::ModifiedBy, Expr::value(application.modified_by))
            .col_expr(
                Column::ModifiedAt,
                Expr::value(application.modified_at.map(stamp)),
            )
            .filter(Column::TenantId.eq(application.tenant_id))
            .filter(Column::Id.eq(application.id))
            .exec(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(result.rows_affected > 0)
    }

    async fn replace_key(
        &self,
        application: &Application,
        key_hash: &KeyHash,
    ) -> Result<bool, RepoError> {
        let result = Entity::update_many()
            .col_expr(Column::KeyHash, Expr::value(hash_hex(key_hash)))
            .col_expr(Column::ModifiedBy, Expr::value(application.modified_by))
            .col_expr(
                Column::ModifiedAt,
                Expr::value(application.modified_at.map(stamp)),
            )
            .filter(Column::TenantId.eq(application.tenant_id))
            .filter(Column::Id.eq(application.id))
            .exec(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(result.rows_affected > 0)
    }

    async fn delete(&self, tenant_id: Uuid, id: Uuid) -> Result<bool, RepoError> {
        let result = Entity::delete_many()
            .filter(Column::TenantId.eq(tenant_id))
            .filter(Column::Id.eq(id))
            .exec(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(result.rows_affected > 0)
    }

    async fn delete_expired(&self, now: OffsetDateTime) -> Result<u64, RepoError> {
        let result = Entity::delete_many()
            .filter(Column::ExpiresAt.lte(stamp(now)))
            .exec(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(result.rows_affected)
    }
}
