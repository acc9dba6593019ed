//! SQLite's proxy reads (`proxies.rs`): on the calling thread (`direct.rs`), through SeaORM's
//! pool when the file is locked for the moment. A call's tokens are not read with the key:
//! point reads take microseconds here, so they are read once the caller is authorized.

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use sea_orm::DatabaseConnection;
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::application::KeyHash;
use tokenvault_domain::ports::{Beside, StoredProxy};
use tokenvault_domain::token::StoredToken;
use uuid::Uuid;

use crate::direct::DirectReads;
use tokenvault_persistence_shared::backend::ProxyReads;
use tokenvault_persistence_shared::entity::proxy;
use tokenvault_persistence_shared::proxies::{OF_LIVE_TENANT, by_id, by_key, to_domain};
use tokenvault_persistence_shared::rows::{self, columns};

static PROXY_BY_ID: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {} FROM proxies WHERE tenant_id = ?1 AND id = ?2",
        columns::<proxy::Column>(None, &[])
    )
});

static PROXY_BY_KEY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {} FROM proxies WHERE key_hash = ?1 AND {OF_LIVE_TENANT}",
        columns::<proxy::Column>(None, &[])
    )
});

/// A SQLite file's proxy reads.
#[derive(Debug)]
pub(crate) struct SqliteProxies {
    direct: Arc<DirectReads>,
    pool: DatabaseConnection,
}

impl SqliteProxies {
    /// The reads of the file behind `direct`, `pool` standing in while it is locked.
    pub(crate) fn new(direct: Arc<DirectReads>, pool: DatabaseConnection) -> Self {
        Self { direct, pool }
    }
}

#[async_trait]
impl ProxyReads for SqliteProxies {
    async fn by_id(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<StoredProxy>, RepoError> {
        let key = [tenant_id.as_bytes().to_vec(), id.as_bytes().to_vec()];
        if let Some(found) = self.direct.one(PROXY_BY_ID.as_str(), key, |row| {
            rows::whole(row, rows::proxy::from_sqlite)
        }) {
            return found?.map(to_domain).transpose();
        }
        by_id(&self.pool, tenant_id, id).await
    }

    async fn by_key(&self, key_hash: String) -> Result<Option<StoredProxy>, RepoError> {
        if let Some(found) = self.direct.one(PROXY_BY_KEY.as_str(), [&key_hash], |row| {
            rows::whole(row, rows::proxy::from_sqlite)
        }) {
            return found?.map(to_domain).transpose();
        }
        by_key(&self.pool, key_hash).await
    }

    async fn by_key_also(
        &self,
        _: &KeyHash,
        _: Option<&KeyHash>,
        _: &[String],
        _: OffsetDateTime,
    ) -> Option<Result<Option<(StoredProxy, Beside<Vec<StoredToken>>)>, RepoError>> {
        None
    }
}
