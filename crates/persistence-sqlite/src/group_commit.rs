//! Group commit for single-token inserts on SQLite.
//!
//! SQLite at `synchronous=FULL` syncs the disk on every commit, which bounds one-row commits to a
//! few thousand per second on this class of machine, while one transaction of a hundred rows costs
//! about the same as one row (docs/performance-journal.md). Concurrent `POST /tokens` therefore hand their
//! row to the file's writer thread (`sqlite/writer.rs`), which takes every row waiting at that moment,
//! writes them in one transaction and answers each caller only after the commit returned: an
//! acknowledged token is as durable as before.
//!
//! Each row is its own execution of one cached statement in the group's transaction: a
//! constraint violation (duplicate id or dedup key, a tenant deleted meanwhile) undoes only that
//! statement and is that caller's answer. Any other failure (the database busy past the timeout,
//! unwritable, a failed commit) is the group's: the transaction is rolled back and every caller
//! of the group gets the error; nothing is retried behind their back.

use std::sync::LazyLock;

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, ErrorCode, params_from_iter};
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::TokenWrite;
use tokio::sync::oneshot;
use uuid::Uuid;

use crate::token_months::Created;
use crate::tx::transaction;
use tokenvault_persistence_shared::entity::token;
use tokenvault_persistence_shared::rows::token::NOT_INSERTED;
use tokenvault_persistence_shared::rows::{columns, sqlite_marks};

/// The insert, its columns those of the entity that a new row is written with (`rows/token.rs`).
static INSERT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO tokens ({}) VALUES ({})",
        columns::<token::Column>(None, NOT_INSERTED),
        sqlite_marks::<token::Column>(NOT_INSERTED)
    )
});

pub(crate) type Answer = Result<TokenWrite, RepoError>;

/// A token row (its values, `rows::token::to_sqlite`; its tenant and UTC month of creation, for
/// `token_months`) and the caller waiting for its answer.
pub(crate) struct Pending {
    pub(crate) values: Vec<SqlValue>,
    pub(crate) tenant_id: Uuid,
    pub(crate) month: String,
    pub(crate) reply: oneshot::Sender<Answer>,
}

/// A failure of the group (not of one row), told to every caller of the group.
#[derive(Debug, thiserror::Error)]
#[error("group commit failed: {0}")]
struct CommitFailed(String);

/// Writes `rows` in one transaction and answers each; empties `rows`.
pub(crate) fn write(conn: &Connection, rows: &mut Vec<Pending>) {
    let started = std::time::Instant::now();
    let written = write_batch(conn, rows);
    tracing::debug!(
        rows = rows.len(),
        elapsed_us = started.elapsed().as_micros(),
        "group commit"
    );
    match written {
        Ok(answers) => {
            for (pending, answer) in rows.drain(..).zip(answers) {
                let _ = pending.reply.send(answer);
            }
        }
        Err(err) => {
            tracing::warn!(error = %err, rows = rows.len(), "group commit failed");
            for pending in rows.drain(..) {
                let answer = Err(RepoError::Backend(Box::new(CommitFailed(err.0.clone()))));
                let _ = pending.reply.send(answer);
            }
        }
    }
}

/// The batch in one transaction, with the monthly creation counts of the rows it wrote
/// (`sqlite/token_months.rs`): each row's answer, or the error that rolled it all back.
fn write_batch(conn: &Connection, batch: &[Pending]) -> Result<Vec<Answer>, CommitFailed> {
    transaction(conn, |conn| {
        let answers = batch
            .iter()
            .map(|pending| insert_one(conn, &pending.values))
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut created = Created::default();
        for (pending, answer) in batch.iter().zip(&answers) {
            if matches!(answer, Ok(TokenWrite::Done)) {
                created.add(pending.tenant_id, &pending.month);
            }
        }
        created.write(conn)?;
        Ok(answers)
    })
    .map_err(|e: rusqlite::Error| CommitFailed(e.to_string()))
}

/// One row: its answer when it broke a constraint of its own, else the statement's error.
fn insert_one(conn: &Connection, values: &[SqlValue]) -> rusqlite::Result<Answer> {
    let inserted = conn
        .prepare_cached(&INSERT)?
        .execute(params_from_iter(values.iter()));
    match inserted {
        Ok(_) => Ok(Ok(TokenWrite::Done)),
        Err(e) => conflict(&e).map(Ok).ok_or(e),
    }
}

/// What a constraint violation of one row means, told apart by the constraint it hit.
fn conflict(err: &rusqlite::Error) -> Option<TokenWrite> {
    let rusqlite::Error::SqliteFailure(failure, message) = err else {
        return None;
    };
    if failure.code != ErrorCode::ConstraintViolation {
        return None;
    }
    match failure.extended_code {
        rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY => Some(TokenWrite::Missing),
        rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY | rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE => {
            // "UNIQUE constraint failed: tokens.tenant_id, tokens.container, tokens.dedup_key"
            if message.as_deref().is_some_and(|m| m.contains("dedup_key")) {
                Some(TokenWrite::DuplicateFingerprint)
            } else {
                Some(TokenWrite::DuplicateId)
            }
        }
        _ => None,
    }
}
