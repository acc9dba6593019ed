//! Group commit for single-token inserts on SQLite.
//!
//! SQLite at `synchronous=FULL` syncs the disk on every commit, which bounds one-row commits to a
//! few thousand per second on this class of machine, while one transaction of a hundred rows costs
//! about the same as one row (docs/performance.md). Concurrent `POST /tokens` therefore hand their
//! row to the file's writer thread (`writer.rs`), which takes every row waiting at that moment,
//! writes them in one transaction and answers each caller only after the commit returned: an
//! acknowledged token is as durable as before.
//!
//! Each row is its own execution of one cached statement in the group's transaction: a
//! constraint violation (duplicate id or dedup key, a tenant deleted meanwhile) undoes only that
//! statement and is that caller's answer. Any other failure (the database busy past the timeout,
//! unwritable, a failed commit) is the group's: the transaction is rolled back and every caller
//! of the group gets the error; nothing is retried behind their back.

use rusqlite::{Connection, ErrorCode, params};
use time::format_description::well_known::Rfc3339;
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::TokenWrite;
use tokenvault_domain::token::StoredToken;
use tokio::sync::oneshot;

use crate::sqlite_tx::transaction;
use crate::stamp::stamp;

const INSERT: &str = "INSERT INTO tokens (tenant_id, id, token_type, container, metadata, data, \
     mask, fingerprint, dedup_key, fingerprint_expression, created_by, created_at, modified_by, \
     modified_at, expires_at, deduplicate) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, \
     ?12, ?13, ?14, ?15, ?16)";

pub(crate) type Answer = Result<TokenWrite, RepoError>;

/// A token row and the caller waiting for its answer.
pub(crate) struct Pending {
    pub(crate) row: StoredToken,
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

/// The batch in one transaction: each row's answer, or the error that rolled it all back.
fn write_batch(conn: &Connection, batch: &[Pending]) -> Result<Vec<Answer>, CommitFailed> {
    transaction(conn, |conn| {
        batch
            .iter()
            .map(|pending| insert_one(conn, &pending.row))
            .collect::<rusqlite::Result<Vec<_>>>()
    })
    .map_err(|e: rusqlite::Error| CommitFailed(e.to_string()))
}

/// One row: its answer when it broke a constraint of its own, else the statement's error.
fn insert_one(conn: &Connection, t: &StoredToken) -> rusqlite::Result<Answer> {
    let time = |t: time::OffsetDateTime| {
        stamp(t)
            .format(&Rfc3339)
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
    };
    let uuid = |u: Option<uuid::Uuid>| u.map(|u| u.as_bytes().to_vec());
    let metadata = serde_json::to_string(&t.metadata).unwrap_or_else(|_| "{}".into());
    let inserted = conn.prepare_cached(INSERT)?.execute(params![
        &t.tenant_id.as_bytes()[..],
        t.id,
        t.token_type,
        t.container,
        metadata,
        t.data,
        t.mask,
        t.fingerprint,
        t.dedup_key,
        t.fingerprint_expression,
        uuid(t.created_by),
        time(t.created_at)?,
        uuid(t.modified_by),
        t.modified_at.map(time).transpose()?,
        t.expires_at.map(time).transpose()?,
        t.deduplicate,
    ]);
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
