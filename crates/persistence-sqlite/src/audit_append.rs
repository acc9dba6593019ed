//! The audit append on SQLite, run on the file's writer thread (`sqlite/writer.rs`).
//!
//! The same transaction as PostgreSQL's (`postgres/audit_copy.rs`), statement for statement: the head
//! moves first (a conditional `UPDATE`, or an `INSERT … ON CONFLICT DO NOTHING` for a tenant's
//! first entries), then the entries go in; a head that did not move means another appender got
//! there first (`HeadMoved`), an entry that lands on a taken (tenant, seq) behind a head that
//! did move means a row beyond the head that no append wrote (`SeqTaken`: the chain is broken).
//! Either way nothing is written. Values are bound as sqlx binds them (`rows/write.rs`): UUIDs
//! as 16 bytes, `created_at` as fixed-width UTC text.

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;

use rusqlite::{Connection, ErrorCode, params, params_from_iter};
use tokenvault_domain::RepoError;
use tokenvault_domain::audit::{AppendOutcome, AuditEntry, AuditHead};
use uuid::Uuid;

use crate::direct::DirectReads;
use crate::tx::{backend, transaction};
use tokenvault_persistence_shared::audit_rows::{first_head, move_head};
use tokenvault_persistence_shared::backend::AuditAppender;
use tokenvault_persistence_shared::entity::audit_entry;
use tokenvault_persistence_shared::rows::audit_entry as audit_entry_row;
use tokenvault_persistence_shared::rows::audit_entry::sqlite_text;
use tokenvault_persistence_shared::rows::write::{SqliteValues, put_row};
use tokenvault_persistence_shared::rows::{columns, sqlite_marks};

static FIRST_HEAD: LazyLock<String> = LazyLock::new(|| first_head(|n| format!("?{n}")));

static MOVE_HEAD: LazyLock<String> = LazyLock::new(|| move_head(|n| format!("?{n}")));

/// An entry, its values bound in the entity's column order (`rows/audit_entry.rs`).
static ENTRY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO audit_log ({}) VALUES ({})",
        columns::<audit_entry::Column>(None, &[]),
        sqlite_marks::<audit_entry::Column>(&[])
    )
});

/// Why an append wrote nothing.
enum Refused {
    /// Another appender moved the head first.
    HeadMoved,
    /// The head was the expected one, but a sequence number after it was taken.
    SeqTaken,
    Failed(rusqlite::Error),
}

impl From<rusqlite::Error> for Refused {
    fn from(err: rusqlite::Error) -> Self {
        if seq_taken(&err) {
            Self::SeqTaken
        } else {
            Self::Failed(err)
        }
    }
}

/// A SQLite file's appends, run on its writer thread (`writer.rs`).
#[derive(Debug)]
pub(crate) struct SqliteAppender {
    file: Arc<DirectReads>,
}

impl SqliteAppender {
    /// The appends of the file behind `file`.
    pub(crate) fn new(file: Arc<DirectReads>) -> Self {
        Self { file }
    }
}

#[async_trait]
impl AuditAppender for SqliteAppender {
    async fn append(
        &self,
        tenant_id: Uuid,
        expected: Option<&AuditHead>,
        entries: &[AuditEntry],
    ) -> Result<AppendOutcome, RepoError> {
        let (expected, entries) = (expected.cloned(), entries.to_vec());
        self.file
            .writer()
            .run(move |conn| append(conn, tenant_id, expected.as_ref(), &entries))
            .await
    }

    /// A job that does nothing, queued behind every append before it.
    async fn settled(&self) -> Result<(), RepoError> {
        self.file.writer().run(|_| Ok(())).await
    }
}

/// Appends `entries` (checked by the caller) after `expected`; whatever else it answers, it
/// wrote nothing.
pub(crate) fn append(
    conn: &Connection,
    tenant_id: Uuid,
    expected: Option<&AuditHead>,
    entries: &[AuditEntry],
) -> Result<AppendOutcome, RepoError> {
    let Some(last) = entries.last() else {
        return Ok(AppendOutcome::Appended);
    };
    let tenant = &tenant_id.as_bytes()[..];
    let rows = entries
        .iter()
        .map(|entry| {
            let mut values = SqliteValues::new(sqlite_text);
            put_row(&mut values, &[], |row| audit_entry_row::put(entry, row))
                .map(|()| values.values)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(RepoError::Backend)?;
    let written = transaction(conn, |conn| {
        let moved = match expected {
            None => conn
                .prepare_cached(&FIRST_HEAD)?
                .execute(params![tenant, last.seq, last.hash])?,
            Some(head) => conn
                .prepare_cached(&MOVE_HEAD)?
                .execute(params![last.seq, last.hash, tenant, head.seq, head.hash])?,
        };
        if moved != 1 {
            return Err(Refused::HeadMoved);
        }
        let mut insert = conn.prepare_cached(&ENTRY)?;
        for values in &rows {
            insert.execute(params_from_iter(values))?;
        }
        Ok(())
    });
    match written {
        Ok(()) => Ok(AppendOutcome::Appended),
        Err(Refused::HeadMoved) => Ok(AppendOutcome::HeadMoved),
        Err(Refused::SeqTaken) => Ok(AppendOutcome::SeqTaken),
        Err(Refused::Failed(e)) => Err(backend(e)),
    }
}

/// Whether `err` is a violation of the unique (tenant, seq) index (any other uniqueness
/// violation, a reused entry id, stays an error).
fn seq_taken(err: &rusqlite::Error) -> bool {
    match err {
        rusqlite::Error::SqliteFailure(failure, Some(message)) => {
            failure.code == ErrorCode::ConstraintViolation
                && message.contains("audit_log.tenant_id, audit_log.seq")
        }
        _ => false,
    }
}
