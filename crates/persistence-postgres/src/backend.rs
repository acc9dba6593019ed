//! A PostgreSQL database's backend (`engine.rs`): its own connections and threads
//! (`direct.rs`), the key-and-token reads answered together (`key_group.rs`: one per database,
//! so its bound on statements running at once holds for the database), and each repository's
//! part made over them.
//!
//! On Citus (`distributed`) the tenant-owned tables are distributed by tenant: no statement
//! may find a tenant's rows through another table's row, as the joined reads do (key → tenant
//! → token, in one statement or in a batch of many keys), since Citus can route a statement to
//! the tenant's node only when it names the tenant. Such reads take their two-step paths
//! instead: the key (reference tables), then the tenant's rows by its id.

use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::DatabaseConnection;

use crate::activity::PgActivity;
use crate::appender::PgAppender;
use crate::applications::PgApplications;
use crate::direct::PgDirect;
use crate::key_group::KeyGroup;
use crate::key_listener::KeyMemory;
use crate::proxies::PgProxies;
use crate::reactors::PgReactors;
use crate::tenants::PgTenants;
use crate::tokens::PgTokens;
use tokenvault_persistence_shared::backend::ActivityWriter;
use tokenvault_persistence_shared::backend::ApplicationReads;
use tokenvault_persistence_shared::backend::AuditAppender;
use tokenvault_persistence_shared::backend::Backend;
use tokenvault_persistence_shared::backend::ProxyReads;
use tokenvault_persistence_shared::backend::ReactorReads;
use tokenvault_persistence_shared::backend::TenantReads;
use tokenvault_persistence_shared::backend::TokenEngine;
use tokenvault_persistence_shared::reads::Reads;

/// A PostgreSQL database's backend.
#[derive(Debug)]
pub(crate) struct PgBackend {
    pg: Arc<PgDirect>,
    /// Key-and-token reads answered together; `None` on Citus.
    key_group: Option<Arc<KeyGroup>>,
    /// The applications of the keys seen, kept in memory (`key_cache.rs`); `None` on Citus.
    keys: Option<KeyMemory>,
    /// A Citus database.
    distributed: bool,
}

impl PgBackend {
    /// The backend of the database whose own connections and threads are `pg`, keeping the
    /// keys it reads in `keys`; `citus`: its tables are distributed by tenant.
    pub(crate) fn new(pg: Arc<PgDirect>, keys: Option<KeyMemory>, citus: bool) -> Self {
        Self {
            key_group: (!citus).then(|| Arc::new(KeyGroup::new(pg.clone()))),
            keys,
            pg,
            distributed: citus,
        }
    }
}

#[async_trait]
impl Backend for PgBackend {
    fn reads(&self, db: &DatabaseConnection) -> Reads {
        Reads::new(db.clone(), Some(self.pg.clone()), self.distributed)
    }

    fn applications(&self, db: &DatabaseConnection) -> Arc<dyn ApplicationReads> {
        Arc::new(PgApplications::new(
            self.reads(db),
            self.pg.clone(),
            self.key_group.clone(),
            self.keys.as_ref().map(|keys| keys.cache().clone()),
        ))
    }

    fn proxies(&self, db: &DatabaseConnection) -> Arc<dyn ProxyReads> {
        Arc::new(PgProxies::new(self.reads(db)))
    }

    fn reactors(&self, db: &DatabaseConnection) -> Arc<dyn ReactorReads> {
        Arc::new(PgReactors::new(self.reads(db)))
    }

    fn tenants(&self, db: &DatabaseConnection) -> Arc<dyn TenantReads> {
        Arc::new(PgTenants::new(self.reads(db)))
    }

    fn tokens(&self, db: &DatabaseConnection) -> Arc<dyn TokenEngine> {
        Arc::new(PgTokens::new(self.pg.clone(), self.reads(db), db.clone()))
    }

    fn audit(&self) -> Arc<dyn AuditAppender> {
        Arc::new(PgAppender::new(self.pg.clone()))
    }

    fn activity(&self, db: &DatabaseConnection) -> Arc<dyn ActivityWriter> {
        Arc::new(PgActivity::new(db.clone(), self.distributed))
    }

    async fn spanning_tenants(
        &self,
        db: &DatabaseConnection,
    ) -> Result<sea_orm::DatabaseTransaction, sea_orm::DbErr> {
        crate::citus::fanning_out(db, self.distributed).await
    }

    fn keys_changed(&self) {
        if let Some(keys) = &self.keys {
            keys.cache().forget();
        }
    }

    async fn stop(&self, until: tokio::time::Instant) {
        if let Some(keys) = &self.keys {
            keys.stop(until).await;
        }
        self.pg.stop(until).await;
    }
}
