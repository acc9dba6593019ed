//! An open database: what `connect` (`connect.rs`) returns, owned by whoever opened it.
//!
//! Beside SeaORM's pool, each database has machinery of its own, its [`Backend`], made at
//! connect and nowhere else (no process-wide registry, no thread started by a repository's
//! constructor):
//!
//! - a SQLite file: its direct reads on the calling thread (`sqlite/direct.rs`), its writer thread
//!   (`sqlite/writer.rs`: token inserts in groups, audit appends, activity) and its checkpoint thread
//!   (`sqlite/checkpoint.rs`);
//! - PostgreSQL: the adapter's own connections for point reads (`postgres/direct.rs`), the token
//!   group writer thread (`postgres/group.rs`), the audit appender thread (`postgres/audit_copy.rs`) and the
//!   queue of key-and-token reads answered together (`postgres/key_group.rs`: one per database, so
//!   its bound on statements running at once holds for the database).
//!
//! Every repository is made from a [`Database`] and takes its part of the backend; its owner stops the
//! threads with [`Database::close`] (the server does, last, `crates/server/src/lib.rs`), and
//! they also end once the last clone is dropped, after the work queued before.

use std::ops::Deref;
use std::sync::Arc;

use sea_orm::DatabaseConnection;

use crate::backend::Backend;
use crate::reads::Reads;

/// An open, owned database: SeaORM's pool and its backend. Derefs to the pool for what SeaORM
/// does alone (migrations, statistics, raw statements).
#[derive(Clone, Debug)]
pub struct Database {
    db: DatabaseConnection,
    backend: Arc<dyn Backend>,
}

impl Database {
    /// A database of SeaORM's pool `db` and its database's `backend` (each database's `open`).
    pub fn new(db: DatabaseConnection, backend: Arc<dyn Backend>) -> Self {
        Self { db, backend }
    }

    /// SeaORM's pool.
    pub fn connection(&self) -> &DatabaseConnection {
        &self.db
    }

    /// What the database does its own way.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// Tests only: on a SQLite file, every read on the calling thread answers as a locked file
    /// does (or again as usual), so that the reads through the pool that stand in for them
    /// run. Nothing on PostgreSQL.
    #[cfg(feature = "test-support")]
    pub fn refuse_direct_reads(&self, refused: bool) {
        self.backend.refuse_direct_reads(refused);
    }

    /// Where the repositories' point reads run.
    pub fn reads(&self) -> Reads {
        self.backend.reads(&self.db)
    }

    /// Closes the database for every clone of it: the pool, then the backend's threads, each
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
        self.backend.stop(until).await;
        closed
    }
}

impl Deref for Database {
    type Target = DatabaseConnection;

    fn deref(&self) -> &DatabaseConnection {
        &self.db
    }
}
