//! PostgreSQL's proxy reads (`proxies.rs`): on the adapter's own connections (`reads.rs`),
//! and a proxy's key with the tokens a call names in two statements at once (not on Citus,
//! whose statements reach a tenant's rows only by naming the tenant).

use async_trait::async_trait;
use sea_orm::sea_query::Query;
use sea_orm::{ColumnTrait, Condition, EntityTrait, QueryFilter};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::application::KeyHash;
use tokenvault_domain::ports::{Beside, StoredProxy};
use tokenvault_domain::token::StoredToken;
use uuid::Uuid;

use tokenvault_persistence_shared::backend::ProxyReads;
use tokenvault_persistence_shared::entity::proxy::{Column, Entity};
use tokenvault_persistence_shared::entity::{application, token};
use tokenvault_persistence_shared::proxies::{by_id, by_key};
use tokenvault_persistence_shared::reads::Reads;
use tokenvault_persistence_shared::repo_error::repo_err;
use tokenvault_persistence_shared::rows::application::hash_hex;
use tokenvault_persistence_shared::stamp::stamp;

/// A PostgreSQL database's proxy reads.
#[derive(Debug)]
pub(crate) struct PgProxies {
    reads: Reads,
}

impl PgProxies {
    /// The reads of a PostgreSQL database.
    pub(crate) fn new(reads: Reads) -> Self {
        Self { reads }
    }
}

#[async_trait]
impl ProxyReads for PgProxies {
    async fn by_id(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<StoredProxy>, RepoError> {
        by_id(&self.reads, tenant_id, id).await
    }

    async fn by_key(&self, key_hash: String) -> Result<Option<StoredProxy>, RepoError> {
        by_key(&self.reads, key_hash).await
    }

    async fn by_key_also(
        &self,
        hash: &KeyHash,
        caller_key: Option<&KeyHash>,
        token_ids: &[String],
        now: OffsetDateTime,
    ) -> Option<Result<Option<(StoredProxy, Beside<Vec<StoredToken>>)>, RepoError>> {
        // Citus: the proxy alone; the tokens are then read by the proxy's tenant, on its node.
        if self.reads.distributed() {
            return None;
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
            .filter(tokenvault_persistence_shared::rows::token::live(now))
            .all(&self.reads);
        let (proxy, tokens) = tokio::join!(by_key(&self.reads, hash_hex(hash)), tokens);
        let proxy = match proxy {
            Ok(proxy) => proxy,
            Err(e) => return Some(Err(e)),
        };
        let Some(proxy) = proxy else {
            return Some(Ok(None));
        };
        // The key may have moved between the two statements: only the proxy's tenant. A
        // failed read fails the call, as the proxy's own read does: a second path that read
        // them again once the caller is known would run only when the database fails, which
        // no test brings about.
        let tenant_id = proxy.proxy.tenant_id;
        let tokens = match tokens {
            Ok(rows) => rows
                .into_iter()
                .filter(|row| row.tenant_id == tenant_id)
                .map(tokenvault_persistence_shared::rows::token::to_domain)
                .collect::<Result<Vec<_>, _>>(),
            Err(e) => Err(repo_err(e)),
        };
        Some(tokens.map(|tokens| Some((proxy, Beside::Read(tokens)))))
    }
}
