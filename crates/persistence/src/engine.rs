//! An open database: what `connect` (`connect.rs`) returns, owned by whoever opened it.
//!
//! Beside SeaORM's pool, each backend has machinery of its own, made here at connect and
//! nowhere else (no process-wide registry, no thread started by a repository's constructor):
//!
//! - a SQLite file: its direct reads on the calling thread (`sqlite/direct.rs`), its writer thread
//!   (`sqlite/writer.rs`: token inserts in groups, audit appends, activity) and its checkpoint thread
//!   (`sqlite/checkpoint.rs`);
//! - PostgreSQL: the adapter's own connections for point reads (`postgres/direct.rs`), the token
//!   group writer thread (`postgres/group.rs`), the audit appender thread (`postgres/audit_copy.rs`) and the
//!   queue of key-and-token reads answered together (`postgres/key_group.rs`: one per database, so
//!   its bound on statements running at once holds for the database).
//!
//! Every repository is made from a [`Database`] and shares its engine; its owner stops the
//! threads with [`Database::close`] (the server does, last, `crates/server/src/lib.rs`), and
//! they also end once the last clone is dropped, after the work queued before.

use std::ops::Deref;
use std::sync::Arc;

use sea_orm::DatabaseConnection;

use crate::postgres::direct::PgDirect;
use crate::postgres::key_group::KeyGroup;
use crate::reads::Reads;
use crate::sqlite::direct::DirectReads;

/// One backend's machinery beside the pool.
///
/// On Citus (PostgreSQL with the extension) the same machinery runs, but for the joined reads
/// ([`Database::distributed`]).
#[derive(Clone, Debug)]
pub(crate) enum Engine {
    /// A SQLite file.
    Sqlite(Arc<DirectReads>),
    /// A PostgreSQL database.
    Postgres(Arc<PgDirect>),
}

/// An open, owned database: SeaORM's pool and its backend's engine. Derefs to the pool for
/// what SeaORM does alone (migrations, statistics, raw statements).
#[derive(Clone, Debug)]
pub struct Database {
    db: DatabaseConnection,
    engine: Engine,
    /// PostgreSQL's grouped key-and-token reads; `None` on SQLite and on Citus.
    key_group: Option<Arc<KeyGroup>>,
    /// A Citus database ([`Database::distributed`]).
    distributed: bool,
}

impl Database {
    pub(crate) fn new(db: DatabaseConnection, engine: Engine) -> Self {
        let key_group = match &engine {
            Engine::Postgres(pg) => Some(Arc::new(KeyGroup::new(pg.clone()))),
            Engine::Sqlite(_) => None,
        };
        Self {
            db,
            engine,
            key_group,
            distributed: false,
        }
    }

    /// Marks a Citus database, whose tenant-owned tables are distributed by tenant: no
    /// statement may find a tenant's rows through another table's row, as the joined fast
    /// paths do (key → tenant → token, in one statement or in a batch of many keys), since
    /// Citus can route a statement to the tenant's node only when it names the tenant. Such
    /// reads take their two-step paths instead: the key (reference tables), then the tenant's
    /// rows by its id.
    pub(crate) fn distributed(mut self, citus: bool) -> Self {
        self.distributed = citus;
        if citus {
            self.key_group = None;
        }
        self
    }

    /// PostgreSQL's key-and-token reads answered together; `None` on SQLite.
    pub(crate) fn key_group(&self) -> Option<Arc<KeyGroup>> {
        self.key_group.clone()
    }

    /// SeaORM's pool.
    pub fn connection(&self) -> &DatabaseConnection {
        &self.db
    }

    /// The backend's machinery.
    pub(crate) fn engine(&self) -> Engine {
        self.engine.clone()
    }

    /// PostgreSQL's own connections and threads; `None` on SQLite.
    pub(crate) fn postgres(&self) -> Option<Arc<PgDirect>> {
        match &self.engine {
            Engine::Postgres(pg) => Some(pg.clone()),
            Engine::Sqlite(_) => None,
        }
    }

    /// Tests only: on a SQLite file, every read on the calling thread answers as a locked file
    /// does (or again as usual), so that the reads through the pool that stand in for them
    /// run. Nothing on PostgreSQL.
    #[cfg(feature = "test-support")]
    pub fn refuse_direct_reads(&self, refused: bool) {
        if let Engine::Sqlite(file) = &self.engine {
            file.refuse(refused);
        }
    }

    /// Where the repositories' point reads run.
    pub(crate) fn reads(&self) -> Reads {
        Reads::new(self.db.clone(), self.postgres(), self.distributed)
    }

    /// Closes the database for every clone of it: the pool, then the engine's threads, each
    /// once the work queued before is done (a SQLite file's log is then copied back into it).
    /// Returns after the threads have ended, or 35 s after it began (logged).
    /// Later calls of a repository made from it fail.
    ///
    /// # Errors
    /// The pool failed to close (the threads are stopped all the same).
    pub async fn close(self) -> Result<(), sea_orm::DbErr> {
        // One deadline for the whole close; the pool waits for its connections in use.
        let until = tokio::time::Instant::now() + crate::threads::STOP_WAIT;
        let closed = tokio::time::timeout_at(until, self.db.close())
            .await
            .unwrap_or_else(|_| {
                Err(sea_orm::DbErr::Custom(
                    "the pool's connections were not given back in time".into(),
                ))
            });
        match &self.engine {
            Engine::Sqlite(file) => file.stop(until).await,
            Engine::Postgres(pg) => pg.stop(until).await,
        }
        closed
    }
}

impl Deref for Database {
    type Target = DatabaseConnection;

    fn deref(&self) -> &DatabaseConnection {
        &self.db
    }
}
