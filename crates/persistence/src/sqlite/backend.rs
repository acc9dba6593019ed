//! A SQLite file's backend (`engine.rs`): its direct reads, writer and checkpoint threads
//! (`direct.rs`), and each repository's part made over them.

use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::DatabaseConnection;

use crate::backend::ActivityWriter;
use crate::backend::ApplicationReads;
use crate::backend::AuditAppender;
use crate::backend::Backend;
use crate::backend::ProxyReads;
use crate::backend::ReactorReads;
use crate::backend::TenantReads;
use crate::backend::TokenEngine;
use crate::reads::Reads;
use crate::sqlite::activity::SqliteActivity;
use crate::sqlite::applications::SqliteApplications;
use crate::sqlite::audit_append::SqliteAppender;
use crate::sqlite::direct::DirectReads;
use crate::sqlite::proxies::SqliteProxies;
use crate::sqlite::reactors::SqliteReactors;
use crate::sqlite::tenants::SqliteTenants;
use crate::sqlite::tokens::SqliteTokens;

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
