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
use tokenvault_domain::ports::{AlsoRead, ApplicationRepository, Beside, KeyRead};
use tokenvault_domain::tenant::TenantSettings;
use uuid::Uuid;

use crate::engine::Database;
use crate::entity::application::{Column, Entity};
use crate::paging::newest_first;
use crate::postgres::key_group::KeyGroup;
use crate::postgres::{keyed_read, keyed_search};
use crate::reads::Reads;
use crate::repo_error::repo_err;
use crate::rows::application::{hash_hex, to_active, to_domain};
use crate::sqlite::direct::DirectReads;
use crate::stamp::stamp;
use crate::{grants, postgres, sqlite};

/// Applications in the `applications` table.
#[derive(Clone, Debug)]
pub struct SeaOrmApplicationRepository {
    db: DatabaseConnection,
    /// SQLite's point reads on the calling thread (`sqlite/direct.rs`); `None` on PostgreSQL.
    direct: Option<Arc<DirectReads>>,
    /// Point reads (`reads.rs`: on PostgreSQL the adapter's own connections).
    reads: Reads,
    /// PostgreSQL's key-and-token reads, answered together (`postgres/key_group.rs`).
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

impl SeaOrmApplicationRepository {
    /// The key and what `also` asks for in one round trip, where this database reads it
    /// ahead; `None` where it does not (Citus, whose joins cannot be routed to a tenant's
    /// node; a search on SQLite, whose key and page each take microseconds on the calling
    /// thread; a SQLite file locked for the moment, `sqlite/direct.rs`): the use case then reads
    /// what it needs once the caller is checked.
    async fn read_ahead(
        &self,
        key_hash: String,
        also: &AlsoRead,
        now: OffsetDateTime,
    ) -> Option<Result<Option<KeyRead>, RepoError>> {
        if let Some(search) = &also.search {
            let pg = self.reads.pg_joined()?;
            return keyed_search::key_and_search(pg, key_hash, search, now).await;
        }
        let token_id = also.token.as_deref();
        if let Some(reactor_id) = also.reactor {
            if let Some(pg) = self.reads.pg_joined() {
                return Some(
                    postgres::keyed_reactor::key_and_reactor(
                        pg, key_hash, reactor_id, token_id, now,
                    )
                    .await,
                );
            }
            let direct = self.direct.as_deref()?;
            return sqlite::keyed_reactor::key_and_reactor(
                direct, &key_hash, reactor_id, token_id, now,
            );
        }
        let token_id = token_id?;
        if let Some(group) = &self.key_group {
            return Some(group.read(key_hash, token_id, now).await);
        }
        let found = self
            .direct
            .as_ref()?
            .key_and_token(&key_hash, token_id, now)?;
        Some(found.map(|found| {
            found.map(|(application, settings, token)| KeyRead {
                token: Beside::Read(token),
                ..KeyRead::alone(application, settings)
            })
        }))
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

    async fn find_by_key_hash_also(
        &self,
        hash: &KeyHash,
        also: &AlsoRead,
        now: OffsetDateTime,
    ) -> Result<Option<KeyRead>, RepoError> {
        let found = match self.read_ahead(hash_hex(hash), also, now).await {
            Some(found) => found?,
            None => self
                .find_by_key_hash(hash)
                .await?
                .map(|(application, settings)| KeyRead::alone(application, settings)),
        };
        // Only a private application's key reads anything beside it (decisions §4): the
        // statements join nothing for any other, which is said here once.
        Ok(found.map(|read| {
            if read.application.app_type == ApplicationType::Private {
                read
            } else {
                KeyRead::alone(read.application, read.settings)
            }
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
