//! [`ProxyRepository`] on SeaORM. The key is stored as its hex SHA-256 (unique, for the lookup)
//! and as ciphertext; `configuration` as JSON text. Every query but the key lookup is confined
//! to one tenant; the tokens read with a key (`find_by_key_hash_also`) to the tenant of
//! the proxy holding it, in SQL.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use sea_orm::sea_query::{Expr, Query};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, DatabaseConnection, EntityTrait, QueryFilter,
};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::application::KeyHash;
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::ports::{Beside, ProxyRepository, StoredProxy};
use tokenvault_domain::proxy::Proxy;
use tokenvault_domain::token::StoredToken;
use uuid::Uuid;

use crate::engine::Database;
use crate::entity::proxy::{self, Column, Entity};
use crate::entity::{application, token};
use crate::paging::newest_first;
use crate::reads::Reads;
use crate::repo_error::repo_err;
use crate::rows::application::{hash_from_hex, hash_hex};
use crate::rows::{self, columns};
use crate::search::list_condition;
use crate::sqlite::direct::DirectReads;
use crate::stamp::{stamp, unstamp};

/// Proxies in the `proxies` table.
#[derive(Clone, Debug)]
pub struct SeaOrmProxyRepository {
    db: DatabaseConnection,
    /// SQLite's point reads on the calling thread (`sqlite/direct.rs`); `None` on PostgreSQL.
    direct: Option<Arc<DirectReads>>,
    /// Point reads (`reads.rs`: on PostgreSQL the adapter's own connections).
    reads: Reads,
}

impl SeaOrmProxyRepository {
    /// A repository over `db` (migrated).
    pub fn new(db: Database) -> Self {
        Self {
            direct: db.sqlite(),
            reads: db.reads(),
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

static PROXY_BY_ID: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {} FROM proxies WHERE tenant_id = ?1 AND id = ?2",
        columns::<proxy::Column>(None, &[])
    )
});

/// A live tenant's proxy: a deleted tenant's proxy keys stop at once (`tenant_purge.rs`).
const OF_LIVE_TENANT: &str = "EXISTS (SELECT 1 FROM tenants WHERE tenants.id = proxies.tenant_id \
     AND tenants.deleted_at IS NULL)";

static PROXY_BY_KEY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {} FROM proxies WHERE key_hash = ?1 AND {OF_LIVE_TENANT}",
        columns::<proxy::Column>(None, &[])
    )
});

fn to_domain(m: proxy::Model) -> Result<StoredProxy, RepoError> {
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
        let key = [tenant_id.as_bytes().to_vec(), id.as_bytes().to_vec()];
        if let Some(found) = self.direct.as_ref().and_then(|d| {
            d.one(PROXY_BY_ID.as_str(), key, |row| {
                rows::whole(row, rows::proxy::from_sqlite)
            })
        }) {
            return found?.map(to_domain).transpose();
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

    async fn find_by_key_hash(&self, hash: &KeyHash) -> Result<Option<StoredProxy>, RepoError> {
        if let Some(found) = self.direct.as_ref().and_then(|d| {
            d.one(PROXY_BY_KEY.as_str(), [hash_hex(hash)], |row| {
                rows::whole(row, rows::proxy::from_sqlite)
            })
        }) {
            return found?.map(to_domain).transpose();
        }
        Entity::find()
            .filter(Column::KeyHash.eq(hash_hex(hash)))
            .filter(Expr::cust(OF_LIVE_TENANT))
            .one(&self.reads)
            .await
            .map_err(repo_err)?
            .map(to_domain)
            .transpose()
    }

    async fn find_by_key_hash_also(
        &self,
        hash: &KeyHash,
        caller_key: Option<&KeyHash>,
        token_ids: &[String],
        now: OffsetDateTime,
    ) -> Result<Option<(StoredProxy, Beside<Vec<StoredToken>>)>, RepoError> {
        if self.reads.pg_joined().is_none() || token_ids.is_empty() {
            // SQLite: the proxy alone. Its point reads take microseconds on the calling
            // thread, so the tokens are read once the caller is authorized. Citus likewise:
            // the tokens are then read by the proxy's tenant, on its node.
            return Ok(self
                .find_by_key_hash(hash)
                .await?
                .map(|p| (p, Beside::NotRead)));
        }
        // PostgreSQL: both statements at once, on two of the adapter's connections. The
        // tokens' tenant is the one of the proxy holding this key, and only where they may be
        // used, both decided in SQL: a proxy without auth that has an application, or one
        // with auth called with the key of a live private application of its tenant.
        // One subquery yields the tenant (or none), so the tokens are found by their primary
        // key; an `OR` of subqueries on `tenant_id` made PostgreSQL scan the tenant's tokens.
        let mut usable = Condition::any().add(
            Condition::all()
                .add(Column::RequireAuth.eq(false))
                .add(Column::ApplicationId.is_not_null()),
        );
        if let Some(caller_key) = caller_key {
            let callers_tenant = Query::select()
                .column(application::Column::TenantId)
                .from(application::Entity)
                .and_where(application::Column::KeyHash.eq(hash_hex(caller_key)))
                .and_where(application::Column::AppType.eq("private"))
                .cond_where(
                    Condition::any()
                        .add(application::Column::ExpiresAt.is_null())
                        .add(application::Column::ExpiresAt.gt(stamp(now))),
                )
                .to_owned();
            usable = usable.add(
                Condition::all()
                    .add(Column::RequireAuth.eq(true))
                    .add(Column::TenantId.in_subquery(callers_tenant)),
            );
        }
        let owner = Query::select()
            .column(Column::TenantId)
            .from(Entity)
            .and_where(Column::KeyHash.eq(hash_hex(hash)))
            .cond_where(usable)
            .to_owned();
        let tokens = token::Entity::find()
            .filter(token::Column::TenantId.in_subquery(owner))
            .filter(token::Column::Id.is_in(token_ids.iter().cloned()))
            .filter(crate::rows::token::live(now))
            .all(&self.reads);
        let (proxy, tokens) = tokio::join!(self.find_by_key_hash(hash), tokens);
        let Some(proxy) = proxy? else {
            return Ok(None);
        };
        // The key may have moved between the two statements: only the proxy's tenant. A
        // failed read fails the call, as the proxy's own read does: a second path that read
        // them again once the caller is known would run only when the database fails, which
        // no test brings about.
        let tenant_id = proxy.proxy.tenant_id;
        let tokens = tokens
            .map_err(repo_err)?
            .into_iter()
            .filter(|row| row.tenant_id == tenant_id)
            .map(crate::rows::token::to_domain)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some((proxy, Beside::Read(tokens))))
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
