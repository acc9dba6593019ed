//! SQLite's application reads (`applications.rs`): on the calling thread (`direct.rs`), with a
//! key's token or reactor joined in the same statement; through SeaORM's pool when the file is
//! locked for the moment.

use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::application::Application;
use tokenvault_domain::ports::{AlsoRead, Beside, KeyRead};
use tokenvault_domain::tenant::TenantSettings;
use uuid::Uuid;

use crate::direct::DirectReads;
use crate::keyed_reactor::key_and_reactor;
use tokenvault_persistence_shared::applications::by_id;
use tokenvault_persistence_shared::backend::ApplicationReads;
use tokenvault_persistence_shared::entity::application::{Column, Entity};
use tokenvault_persistence_shared::repo_error::repo_err;
use tokenvault_persistence_shared::rows::application::to_domain;

/// A SQLite file's application reads.
#[derive(Debug)]
pub(crate) struct SqliteApplications {
    direct: Arc<DirectReads>,
    pool: DatabaseConnection,
}

impl SqliteApplications {
    /// The reads of the file behind `direct`, `pool` standing in while it is locked.
    pub(crate) fn new(direct: Arc<DirectReads>, pool: DatabaseConnection) -> Self {
        Self { direct, pool }
    }
}

#[async_trait]
impl ApplicationReads for SqliteApplications {
    async fn by_key(
        &self,
        key_hash: String,
    ) -> Result<Option<(Application, TenantSettings)>, RepoError> {
        if let Some(found) = self.direct.application_by_key(&key_hash) {
            return found;
        }
        let query = Entity::find()
            .filter(Column::KeyHash.eq(key_hash))
            .find_also_related(tokenvault_persistence_shared::entity::tenant::Entity)
            // A deleted tenant's keys stop at once, whatever is left of its rows.
            .filter(tokenvault_persistence_shared::entity::tenant::Column::DeletedAt.is_null());
        let found = query.one(&self.pool).await.map_err(repo_err)?;
        match found {
            Some((app, Some(tenant))) => Ok(Some((
                to_domain(app)?,
                tokenvault_persistence_shared::rows::tenant::to_domain(tenant).settings,
            ))),
            _ => Ok(None),
        }
    }

    /// A token, or a reactor with the token its call names, in one statement; a search is not
    /// read ahead (the key and a page each take microseconds here).
    async fn by_key_also(
        &self,
        key_hash: String,
        also: &AlsoRead,
        now: OffsetDateTime,
    ) -> Option<Result<Option<KeyRead>, RepoError>> {
        if also.search.is_some() {
            return None;
        }
        let token_id = also.token.as_deref();
        if let Some(reactor_id) = also.reactor {
            return key_and_reactor(&self.direct, &key_hash, reactor_id, token_id, now);
        }
        let found = self.direct.key_and_token(&key_hash, token_id?, now)?;
        Some(found.map(|found| {
            found.map(|(application, settings, token)| KeyRead {
                token: Beside::Read(token),
                ..KeyRead::alone(application, settings)
            })
        }))
    }

    async fn by_id(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Application>, RepoError> {
        if let Some(found) = self.direct.application(tenant_id, id) {
            return found;
        }
        by_id(&self.pool, tenant_id, id).await
    }
}
