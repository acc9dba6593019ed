//! Point reads on SQLite on the calling thread, without the driver's worker thread.
//!
//! sqlx runs every SQLite statement on a worker thread of its own and hands the statement and
//! the rows over channels: two thread wake-ups per statement. Under the detokenize load a `perf`
//! profile put ~45 % of the server's CPU in the kernel's scheduler for those hand-offs
//! (docs/performance-journal.md). The hottest reads are single rows found by a primary or unique key
//! (an API key's application on every request, a token by id), which SQLite answers from its page
//! cache in microseconds: they run here, on a small pool of rusqlite connections opened on the
//! same file, with prepared statements cached per connection. Each connection is
//! `query_only`; writes go through the file's writer thread (`sqlite/writer.rs`) or SeaORM's pool,
//! and every read that may scan stays on SeaORM.
//!
//! Consistency is SQLite's own: in WAL mode each statement reads the last committed state, so a
//! key regenerated or deleted through SeaORM is refused by the next request (decisions §4).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, params};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokenvault_domain::RepoError;
use tokenvault_domain::application::Application;
use tokenvault_domain::ports::TokenWrite;
use tokenvault_domain::tenant::TenantSettings;
use tokenvault_domain::token::StoredToken;
use uuid::Uuid;

use crate::checkpoint::{self, Checkpointer};
use crate::writer::{OnDisk, Writer};
use tokenvault_persistence_shared::entity::{application, token};
use tokenvault_persistence_shared::rows::tenant::{settings_columns, settings_from_sqlite};
use tokenvault_persistence_shared::rows::{self, Fields, columns};
use tokenvault_persistence_shared::stamp::stamp;

/// At most this many idle connections are kept; more are opened only while more threads read
/// at once (each read holds its connection only for the statement, never across an `await`).
const MAX_IDLE: usize = 8;

/// A pool of read-only connections on one SQLite file, and its writer thread.
pub(crate) struct DirectReads {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    /// The file's writer thread (`sqlite/writer.rs`): token inserts, audit and activity flushes.
    writer: Arc<Writer>,
    /// Its checkpoint thread (`sqlite/checkpoint.rs`), if it could start.
    checkpointer: Option<Checkpointer>,
    /// Set by [`Self::stop`]: no read opens a connection after it.
    closed: AtomicBool,
    /// Tests only: every read answers as a locked file does, so that each caller's read
    /// through the pool runs (`Database::refuse_direct_reads`). While the engine runs, every
    /// connection on the file holds a shared lock, so no test can lock it against readers.
    #[cfg(feature = "test-support")]
    refused: AtomicBool,
}

impl std::fmt::Debug for DirectReads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectReads")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// The key's application and its tenant's settings.
static APPLICATION_BY_KEY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {}, {} \
         FROM applications a JOIN tenants t ON t.id = a.tenant_id \
         WHERE a.key_hash = ?1 AND t.deleted_at IS NULL",
        columns::<application::Column>(Some("a"), &[]),
        settings_columns("t", None)
    )
});

static APPLICATION_BY_ID: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {} FROM applications a WHERE a.tenant_id = ?1 AND a.id = ?2",
        columns::<application::Column>(Some("a"), &[])
    )
});

static LIVE_TOKEN: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {} FROM tokens k \
         WHERE k.tenant_id = ?1 AND k.id = ?2 AND (k.expires_at IS NULL OR k.expires_at > ?3)",
        columns::<token::Column>(Some("k"), &[])
    )
});

/// The key's application, its tenant's settings and, for a private application only, the live
/// token `?2` of its tenant: one statement, one read transaction (`postgres/keyed_read.rs`).
static KEY_AND_TOKEN: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {}, {}, {} \
         FROM applications a JOIN tenants t ON t.id = a.tenant_id \
         LEFT JOIN tokens k ON a.app_type = 'private' AND k.tenant_id = a.tenant_id \
           AND k.id = ?2 AND (k.expires_at IS NULL OR k.expires_at > ?3) \
         WHERE a.key_hash = ?1 AND t.deleted_at IS NULL",
        columns::<application::Column>(Some("a"), &[]),
        settings_columns("t", None),
        columns::<token::Column>(Some("k"), &[])
    )
});

/// How long a direct read waits on a lock before it leaves the read to SeaORM (which waits
/// without holding a thread). WAL readers wait only in the cases SQLite documents (the WAL being
/// recovered after a crash, the last connection closing the database): rare, but a read must not
/// stall a worker thread, and every request on it, for the 10 s the pool waits.
const BUSY_WAIT: Duration = Duration::from_millis(100);

/// What [`DirectReads::key_and_token`] finds: the application, its tenant's settings, the token.
pub(crate) type KeyAndToken = (Application, TenantSettings, Option<StoredToken>);

fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

fn backend(err: rusqlite::Error) -> RepoError {
    RepoError::Backend(Box::new(err))
}

/// `now` bound exactly as SeaORM binds it for the same comparison.
pub(crate) fn bound_time(now: OffsetDateTime) -> Result<String, RepoError> {
    stamp(now)
        .format(&Rfc3339)
        .map_err(|e| RepoError::Backend(Box::new(e)))
}

impl DirectReads {
    /// Direct reads on the SQLite `file` `connect` (`connect.rs`) opened, with its writer and
    /// checkpoint threads, which start here.
    ///
    /// # Errors
    /// The writer thread could not start.
    pub(crate) fn open_file(file: &OnDisk) -> std::io::Result<Arc<Self>> {
        let writer = Arc::new(Writer::start(file)?);
        let checkpointer = checkpoint::start(file.path.clone(), Arc::downgrade(&writer));
        Ok(Arc::new(Self {
            path: file.path.clone(),
            idle: Mutex::new(Vec::new()),
            writer,
            checkpointer,
            closed: AtomicBool::new(false),
            #[cfg(feature = "test-support")]
            refused: AtomicBool::new(false),
        }))
    }

    /// Stops the file's threads: the checkpointer, then the writer once what was queued is
    /// written (it copies the log back last); closes the idle read connections. Reads and
    /// writes after it fail.
    pub(crate) async fn stop(&self, until: tokio::time::Instant) {
        self.closed.store(true, Ordering::Release);
        if let Some(checkpointer) = &self.checkpointer {
            checkpointer.stop(until).await;
        }
        if let Ok(mut idle) = self.idle.lock() {
            idle.clear();
        }
        self.writer.stop(until).await;
    }

    fn open(&self) -> rusqlite::Result<Connection> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_WAIT)?;
        conn.pragma_update(None, "query_only", true)?;
        Ok(conn)
    }

    /// Runs `read` on an idle connection (or a new one) on this thread; `None` when the database
    /// was locked past [`BUSY_WAIT`] (the caller reads through SeaORM instead).
    fn with<T>(
        &self,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Option<Result<T, RepoError>> {
        if self.closed.load(Ordering::Acquire) {
            return Some(Err(RepoError::Backend("the database is closed".into())));
        }
        #[cfg(feature = "test-support")]
        if self.refused.load(Ordering::Acquire) {
            return None;
        }
        let idle = self.idle.lock().map_or(None, |mut idle| idle.pop());
        let conn = match idle {
            Some(conn) => conn,
            None => match self.open() {
                Ok(conn) => conn,
                Err(e) if is_busy(&e) => return None,
                Err(e) => return Some(Err(backend(e))),
            },
        };
        let result = read(&conn);
        if !self.closed.load(Ordering::Acquire)
            && let Ok(mut idle) = self.idle.lock()
            && idle.len() < MAX_IDLE
        {
            idle.push(conn);
        }
        match result {
            Err(e) if is_busy(&e) => None,
            other => Some(other.map_err(backend)),
        }
    }

    /// Tests only: whether every read answers as a locked file does.
    #[cfg(feature = "test-support")]
    pub(crate) fn refuse(&self, refused: bool) {
        self.refused.store(refused, Ordering::Release);
    }

    /// The file's writer thread (`sqlite/writer.rs`).
    pub(crate) fn writer(&self) -> &Writer {
        &self.writer
    }

    /// Inserts `token` through the file's group writer (`sqlite/group_commit.rs`).
    pub(crate) async fn insert_token(&self, token: StoredToken) -> Result<TokenWrite, RepoError> {
        self.writer.insert_token(token).await
    }

    /// The one row `sql` selects with `params` (by a primary or unique key), decoded by `row`.
    /// `None` when the database was locked (see [`Self::with`]).
    pub(crate) fn one<T>(
        &self,
        sql: &'static str,
        params: impl rusqlite::Params,
        row: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Option<Result<Option<T>, RepoError>> {
        self.with(|conn| conn.prepare_cached(sql)?.query_row(params, row).optional())
    }

    /// The application holding `key_hash` (hex) and its tenant's settings; `None` when the
    /// database was locked (see [`Self::with`]).
    pub(crate) fn application_by_key(
        &self,
        key_hash: &str,
    ) -> Option<Result<Option<(Application, TenantSettings)>, RepoError>> {
        let found = self.with(|conn| {
            conn.prepare_cached(&APPLICATION_BY_KEY)?
                .query_row(params![key_hash], |row| {
                    let mut f = Fields::new(row, 0);
                    let model = rows::application::from_sqlite(&mut f)?;
                    Ok((model, settings_from_sqlite(&mut f)?))
                })
                .optional()
        })?;
        Some(found.and_then(|found| {
            found
                .map(|(model, settings)| {
                    Ok((
                        tokenvault_persistence_shared::rows::application::to_domain(model)?,
                        settings,
                    ))
                })
                .transpose()
        }))
    }

    /// The application `id` of `tenant_id`; `None` when the database was locked.
    pub(crate) fn application(
        &self,
        tenant_id: Uuid,
        id: Uuid,
    ) -> Option<Result<Option<Application>, RepoError>> {
        let found = self.one(
            APPLICATION_BY_ID.as_str(),
            params![&tenant_id.as_bytes()[..], &id.as_bytes()[..]],
            |row| rows::whole(row, rows::application::from_sqlite),
        )?;
        Some(found.and_then(|m| {
            m.map(tokenvault_persistence_shared::rows::application::to_domain)
                .transpose()
        }))
    }

    /// The token `id` of `tenant_id` unless it has expired at `now`; `None` when the database
    /// was locked.
    /// The `tokens` rows (entity columns in order) of a statement built for SQLite, run here
    /// with `values`; `None` when the database was locked. Only for statements whose rows are
    /// found through an index (a search by term): a scan stays on SeaORM's pool, off this
    /// thread.
    pub(crate) fn tokens_where(
        &self,
        sql: &str,
        values: &[rusqlite::types::Value],
    ) -> Option<Result<Vec<token::Model>, RepoError>> {
        self.with(|conn| {
            let mut statement = conn.prepare_cached(sql)?;
            let rows = statement.query_map(rusqlite::params_from_iter(values.iter()), |row| {
                rows::whole(row, rows::token::from_sqlite)
            })?;
            rows.collect()
        })
    }

    /// The one integer a `SELECT COUNT(*)` built for SQLite answers, as [`Self::tokens_where`].
    pub(crate) fn count_where(
        &self,
        sql: &str,
        values: &[rusqlite::types::Value],
    ) -> Option<Result<u64, RepoError>> {
        self.with(|conn| {
            conn.prepare_cached(sql)?
                .query_row(rusqlite::params_from_iter(values.iter()), |row| {
                    row.get::<_, i64>(0)
                })
        })
        .map(|n| n.map(|n| u64::try_from(n).unwrap_or(0)))
    }

    pub(crate) fn live_token(
        &self,
        tenant_id: Uuid,
        id: &str,
        now: OffsetDateTime,
    ) -> Option<Result<Option<StoredToken>, RepoError>> {
        let now = match bound_time(now) {
            Ok(now) => now,
            Err(e) => return Some(Err(e)),
        };
        let found = self.with(|conn| {
            conn.prepare_cached(&LIVE_TOKEN)?
                .query_row(params![&tenant_id.as_bytes()[..], id, now], |row| {
                    rows::whole(row, rows::token::from_sqlite)
                })
                .optional()
        })?;
        Some(found.and_then(|m| {
            m.map(tokenvault_persistence_shared::rows::token::to_domain)
                .transpose()
        }))
    }

    /// The live tokens of `tenant_id` among `ids` (each once); `None` when the database was
    /// locked. One point read per id, each seeing what was committed when it ran (not one
    /// snapshot for all: each token is whole on its own, which is what a detokenize needs).
    pub(crate) fn live_tokens(
        &self,
        tenant_id: Uuid,
        ids: &[String],
        now: OffsetDateTime,
    ) -> Option<Result<Vec<StoredToken>, RepoError>> {
        let now = match bound_time(now) {
            Ok(now) => now,
            Err(e) => return Some(Err(e)),
        };
        let ids: std::collections::BTreeSet<&str> = ids.iter().map(String::as_str).collect();
        let found = self.with(|conn| {
            let mut statement = conn.prepare_cached(&LIVE_TOKEN)?;
            let mut found = Vec::with_capacity(ids.len());
            for id in &ids {
                let row = statement
                    .query_row(params![&tenant_id.as_bytes()[..], id, now], |row| {
                        rows::whole(row, rows::token::from_sqlite)
                    })
                    .optional()?;
                found.extend(row);
            }
            Ok(found)
        })?;
        Some(found.and_then(|models| {
            models
                .into_iter()
                .map(tokenvault_persistence_shared::rows::token::to_domain)
                .collect()
        }))
    }

    /// The application holding `key_hash` (hex), its tenant's settings and, when it is a
    /// private application, its tenant's live token `token_id`; `None` when the database was
    /// locked.
    pub(crate) fn key_and_token(
        &self,
        key_hash: &str,
        token_id: &str,
        now: OffsetDateTime,
    ) -> Option<Result<Option<KeyAndToken>, RepoError>> {
        let now = match bound_time(now) {
            Ok(now) => now,
            Err(e) => return Some(Err(e)),
        };
        let found = self.with(|conn| {
            conn.prepare_cached(&KEY_AND_TOKEN)?
                .query_row(params![key_hash, token_id, now], |row| {
                    let mut f = Fields::new(row, 0);
                    let application = rows::application::from_sqlite(&mut f)?;
                    let settings = settings_from_sqlite(&mut f)?;
                    // No token joined: its primary key columns (the first two) are NULL.
                    let token = if f.is_null_ahead(1)? {
                        None
                    } else {
                        Some(rows::token::from_sqlite(&mut f)?)
                    };
                    Ok((application, settings, token))
                })
                .optional()
        })?;
        Some(found.and_then(|found| {
            found
                .map(|(model, settings, token)| {
                    Ok((
                        tokenvault_persistence_shared::rows::application::to_domain(model)?,
                        settings,
                        token
                            .map(tokenvault_persistence_shared::rows::token::to_domain)
                            .transpose()?,
                    ))
                })
                .transpose()
        }))
    }
}
