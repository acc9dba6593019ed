//! [`ProxyRepository`] on SeaORM. The key is stored as its hex SHA-256 (unique, for the lookup)
//! and as ciphertext; `configuration` as JSON text. Every query but the key lookup is confined
//! to one tenant; the tokens read with a key (`find_by_key_hash_also`) to the tenant of
//! the proxy holding it, in SQL.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter,
};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::application::KeyHash;
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::ports::{Beside, ProxyRepository, StoredProxy};
use tokenvault_domain::proxy::Proxy;
use tokenvault_domain::token::StoredToken;
use uuid::Uuid;

use crate::backend::ProxyReads;
use crate::engine::Database;
use crate::entity::proxy::{self, Column, Entity};
use crate::one_of_tenant::one_of_tenant;
use crate::paging::newest_first;
use crate::repo_error::repo_err;
use crate::rows::application::{hash_from_hex, hash_hex};
use crate::search::list_condition;
use crate::stamp::{stamp, unstamp};

/// The proxy `id` of `tenant_id` through SeaORM on `db`.
pub async fn by_id(
    db: &impl ConnectionTrait,
    tenant_id: Uuid,
    id: Uuid,
) -> Result<Option<StoredProxy>, RepoError> {
    one_of_tenant::<Entity, _>(db, (Column::TenantId, Column::Id), tenant_id, id, to_domain).await
}

/// The proxy holding `key_hash` (hex), if its tenant is live, through SeaORM on `db`.
pub async fn by_key(
    db: &impl ConnectionTrait,
    key_hash: String,
) -> Result<Option<StoredProxy>, RepoError> {
    Entity::find()
        .filter(Column::KeyHash.eq(key_hash))
        .filter(Expr::cust(OF_LIVE_TENANT))
        .one(db)
        .await
        .map_err(repo_err)?
        .map(to_domain)
        .transpose()
}

/// Proxies in the `proxies` table.
#[derive(Clone, Debug)]
pub struct SeaOrmProxyRepository {
    db: DatabaseConnection,
    /// The database's own reads (`sqlite/proxies.rs`, `postgres/proxies.rs`).
    reads: Arc<dyn ProxyReads>,
}

impl SeaOrmProxyRepository {
    /// A repository over `db` (migrated).
    pub fn new(db: Database) -> Self {
        let reads = db.backend().proxies(db.connection());
        Self {
            reads,
            db: db.connection().clone(),
        }
    }
}

fn corrupt(what: &str, id: Uuid) -> RepoError {
    RepoError::Backend(format!("stored {what} of proxy {id} is unreadable").into())
}

fn configuration_json(configuration: Option<&BTreeMap<String, String>>) -> Option<String> {
    configuration.map(|c| serde_json::to_string(c).unwrap_or_else(|_| "{}".into()))
}

/// A live tenant's proxy: a deleted tenant's proxy keys stop at once (`tenant_purge.rs`).
pub const OF_LIVE_TENANT: &str = "EXISTS (SELECT 1 FROM tenants WHERE tenants.id = proxies.tenant_id \
     AND tenants.deleted_at IS NULL)";

/// A stored row made a proxy; a row that does not decode is a backend error.
pub fn to_domain(m: proxy::Model) -> Result<StoredProxy, RepoError> {
    let id = m.id;
    let configuration = m
        .configuration
        .map(|text| serde_json::from_str(&text).map_err(|_| corrupt("configuration", id)))
        .transpose()?;
    let key_hash = hash_from_hex(&m.key_hash).ok_or_else(|| corrupt("key hash", id))?;
    Ok(StoredProxy {
        proxy: Proxy {
            id,
            tenant_id: m.tenant_id,
            name: m.name,
            destination_url: m.destination_url,
            require_auth: m.require_auth,
            request_transform: m.request_transform,
            response_transform: m.response_transform,
            application_id: m.application_id,
            configuration,
            created_by: m.created_by,
            created_at: unstamp(m.created_at),
            modified_by: m.modified_by,
            modified_at: m.modified_at.map(unstamp),
        },
        key_hash,
        key_ciphertext: m.key_ciphertext,
    })
}

fn to_active(stored: &StoredProxy) -> proxy::ActiveModel {
    let p = &stored.proxy;
    proxy::ActiveModel {
        tenant_id: Set(p.tenant_id),
        id: Set(p.id),
        name: Set(p.name.clone()),
        key_hash: Set(hash_hex(&stored.key_hash)),
        key_ciphertext: Set(stored.key_ciphertext.clone()),
        destination_url: Set(p.destination_url.clone()),
        require_auth: Set(p.require_auth),
        request_transform: Set(p.request_transform.clone()),
        response_transform: Set(p.response_transform.clone()),
        application_id: Set(p.application_id),
        configuration: Set(configuration_json(p.configuration.as_ref())),
        created_by: Set(p.created_by),
        created_at: Set(stamp(p.created_at)),
        modified_by: Set(p.modified_by),
        modified_at: Set(p.modified_at.map(stamp)),
    }
}

#[async_trait]
impl ProxyRepository for SeaOrmProxyRepository {
    async fn insert(&self, proxy: &StoredProxy) -> Result<(), RepoError> {
        Entity::insert(to_active(proxy))
            .exec_without_returning(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(())
    }

    async fn get(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<StoredProxy>, RepoError> {
        self.reads.by_id(tenant_id, id).await
    }

    async fn find_by_key_hash(&self, hash: &KeyHash) -> Result<Option<StoredProxy>, RepoError> {
        self.reads.by_key(hash_hex(hash)).await
    }

    async fn find_by_key_hash_also(
        &self,
        hash: &KeyHash,
        caller_key: Option<&KeyHash>,
        token_ids: &[String],
        now: OffsetDateTime,
    ) -> Result<Option<(StoredProxy, Beside<Vec<StoredToken>>)>, RepoError> {
        if !token_ids.is_empty()
            && let Some(found) = self
                .reads
                .by_key_also(hash, caller_key, token_ids, now)
                .await
        {
            return found;
        }
        Ok(self
            .find_by_key_hash(hash)
            .await?
            .map(|p| (p, Beside::NotRead)))
    }

    async fn list(
        &self,
        tenant_id: Uuid,
        ids: &[Uuid],
        name: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<StoredProxy>, RepoError> {
        let query = Entity::find().filter(list_condition(
            (Column::TenantId, Column::Id, Column::Name),
            tenant_id,
            ids,
            name,
        ));
        newest_first(
            &self.db,
            query,
            (Column::CreatedAt, Column::Id),
            page,
            to_domain,
        )
        .await
    }

    async fn update(&self, stored: &StoredProxy) -> Result<bool, RepoError> {
        let p = &stored.proxy;
        let result = Entity::update_many()
            .col_expr(Column::Name, Expr::value(p.name.clone()))
            .col_expr(
                Column::DestinationUrl,
                Expr::value(p.destination_url.clone()),
            )
            .col_expr(Column::RequireAuth, Expr::value(p.require_auth))
            .col_expr(
                Column::RequestTransform,
                Expr::value(p.request_transform.clone()),
            )
            .col_expr(
                Column::ResponseTransform,
                Expr::value(p.response_transform.clone()),
            )
            .col_expr(Column::ApplicationId, Expr::value(p.application_id))
            .col_expr(
                Column::Configuration,
                Expr::value(configuration_json(p.configuration.as_ref())),
            )
            .col_expr(Column::ModifiedBy, Expr::value(p.modified_by))
            .col_expr(Column::ModifiedAt, Expr::value(p.modified_at.map(stamp)))
            .filter(Column::TenantId.eq(p.tenant_id))
            .filter(Column::Id.eq(p.id))
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
}
