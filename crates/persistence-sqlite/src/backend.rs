//! A SQLite file's backend (`engine.rs`): its direct reads, writer and checkpoint threads
//! (`direct.rs`), and each repository's part made over them.

use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::DatabaseConnection;

use crate::activity::SqliteActivity;
use crate::applications::SqliteApplications;
use crate::audit_append::SqliteAppender;
use crate::direct::DirectReads;
use crate::proxies::SqliteProxies;
use crate::reactors::SqliteReactors;
use crate::tenants::SqliteTenants;
use crate::tokens::SqliteTokens;
use tokenvault_persistence_shared::backend::ActivityWriter;
use tokenvault_persistence_shared::backend::ApplicationReads;
use tokenvault_persistence_shared::backend::AuditAppender;
use tokenvault_persistence_shared::backend::Backend;
use tokenvault_persistence_shared::backend::ProxyReads;
use tokenvault_persistence_shared::backend::ReactorReads;
use tokenvault_persistence_shared::backend::TenantReads;
use tokenvault_persistence_shared::backend::TokenEngine;
use tokenvault_persistence_shared::reads::Reads;

/// A SQLite file's backend.
#[derive(Debug)]
pub(crate) struct SqliteBackend {
    file: Arc<DirectReads>,
}

impl SqliteBackend {
    /// The backend of the file behind `file`.
    pub(crate) fn new(file: Arc<DirectReads>) -> Self {
        Self { file }
    }
}

#[async_trait]
impl Backend for SqliteBackend {
    /// The pool: the point reads of the calling thread are each repository's own.
    fn reads(&self, db: &DatabaseConnection) -> Reads {
        Reads::new(db.clone(), None, false)
    }

    fn applications(&self, db: &DatabaseConnection) -> Arc<dyn ApplicationReads> {
        Arc::new(SqliteApplications::new(self.file.clone(), db.clone()))
    }

    fn proxies(&self, db: &DatabaseConnection) -> Arc<dyn ProxyReads> {
        Arc::new(SqliteProxies::new(self.file.clone(), db.clone()))
    }

    fn reactors(&self, db: &DatabaseConnection) -> Arc<dyn ReactorReads> {
        Arc::new(SqliteReactors::new(self.file.clone(), db.clone()))
    }

    fn tenants(&self, db: &DatabaseConnection) -> Arc<dyn TenantReads> {
        Arc::new(SqliteTenants::new(self.file.clone(), db.clone()))
    }

    fn tokens(&self, db: &DatabaseConnection) -> Arc<dyn TokenEngine> {
        Arc::new(SqliteTokens::new(self.file.clone(), db.clone()))
    }

    fn audit(&self) -> Arc<dyn AuditAppender> {
        Arc::new(SqliteAppender::new(self.file.clone()))
    }

    fn activity(&self, _: &DatabaseConnection) -> Arc<dyn ActivityWriter> {
        Arc::new(SqliteActivity::new(self.file.clone()))
    }

    async fn stop(&self, until: tokio::time::Instant) {
        self.file.stop(until).await;
    }

    #[cfg(feature = "test-support")]
    fn refuse_direct_reads(&self, refused: bool) {
        self.file.refuse(refused);
    }
}
