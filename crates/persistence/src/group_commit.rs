//! Group commit for single-token inserts on SQLite.
//!
//! SQLite at `synchronous=FULL` syncs the disk on every commit, which bounds one-row commits to a
//! few thousand per second on this class of machine, while one transaction of a hundred rows costs
//! about the same as one row (docs/performance.md). Concurrent `POST /tokens` therefore hand their
//! row to one writer task, which takes every row waiting at that moment, writes them in one
//! transaction and answers each caller only after the commit returned: an acknowledged token is
//! as durable as before. A lone row is written in autocommit, as without the writer.
//!
//! The group goes in as one multi-row statement. A unique violation aborts only that statement
//! and leaves the transaction open; the rows then go in one statement each, so each caller still
//! learns its own outcome (duplicate id, duplicate fingerprint). Any other failure rolls the
//! group back and writes its rows again one by one, so one caller's failure is never another's.

use std::sync::OnceLock;

use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, TransactionTrait};
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::TokenWrite;
use tokio::sync::{mpsc, oneshot};

use crate::entity::token;

/// The most rows one transaction takes.
const MAX_BATCH: usize = 256;
/// Rows waiting for the writer; a caller beyond this waits to enqueue.
const QUEUE: usize = 4096;

type Answer = Result<TokenWrite, RepoError>;

struct Pending {
    row: token::ActiveModel,
    reply: oneshot::Sender<Answer>,
}

/// The handle to the writer task, started on first use (it needs the Tokio runtime).
#[derive(Debug, Default)]
pub(crate) struct GroupCommit {
    queue: OnceLock<mpsc::Sender<Pending>>,
}

/// The writer is gone (the runtime is shutting down).
#[derive(Debug, thiserror::Error)]
#[error("the token writer stopped")]
struct WriterStopped;

/// A failed commit, told to every caller of the batch.
#[derive(Debug, thiserror::Error)]
#[error("group commit failed: {0}")]
struct CommitFailed(String);

impl GroupCommit {
    /// Writes `row` with whatever other rows are waiting; returns after the commit.
    pub(crate) async fn insert(
        &self,
        db: &DatabaseConnection,
        row: token::ActiveModel,
        on_error: fn(DbErr) -> Answer,
    ) -> Answer {
        let queue = self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::channel(QUEUE);
            tokio::spawn(run(db.clone(), rx, on_error));
            tx
        });
        let (reply, answer) = oneshot::channel();
        queue
            .send(Pending { row, reply })
            .await
            .map_err(|_| RepoError::Backend(Box::new(WriterStopped)))?;
        answer
            .await
            .map_err(|_| RepoError::Backend(Box::new(WriterStopped)))?
    }
}

async fn run(
    db: DatabaseConnection,
    mut rx: mpsc::Receiver<Pending>,
    on_error: fn(DbErr) -> Answer,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        if batch.len() > 1 {
            let started = std::time::Instant::now();
            let written = write_batch(&db, &batch, on_error).await;
            tracing::debug!(
                rows = batch.len(),
                elapsed_us = started.elapsed().as_micros(),
                "group commit"
            );
            match written {
                Ok(answers) => {
                    for (pending, answer) in batch.drain(..).zip(answers) {
                        let _ = pending.reply.send(answer);
                    }
                    continue;
                }
                Err(err) => {
                    tracing::warn!(error = %err, rows = batch.len(), "group commit failed; writing rows one by one");
                }
            }
        }
        for pending in batch.drain(..) {
            let answer = insert_one(&db, pending.row, on_error).await;
            let _ = pending.reply.send(answer);
        }
    }
}

async fn insert_one<C: ConnectionTrait>(
    db: &C,
    row: token::ActiveModel,
    on_error: fn(DbErr) -> Answer,
) -> Answer {
    match token::Entity::insert(row).exec_without_returning(db).await {
        Ok(_) => Ok(TokenWrite::Done),
        Err(err) => on_error(err),
    }
}

/// The batch in one transaction: each row's answer, or the error that rolled it all back.
async fn write_batch(
    db: &DatabaseConnection,
    batch: &[Pending],
    on_error: fn(DbErr) -> Answer,
) -> Result<Vec<Answer>, CommitFailed> {
    let failed = |e: DbErr| CommitFailed(e.to_string());
    let txn = db.begin().await.map_err(failed)?;
    // One statement for the whole group; if any row violates a constraint the statement is
    // undone as a whole (the transaction stays open) and each row goes in alone to learn which.
    let all = token::Entity::insert_many(batch.iter().map(|p| p.row.clone()))
        .exec_without_returning(&txn)
        .await;
    let mut answers = Vec::with_capacity(batch.len());
    match all {
        Ok(_) => {
            txn.commit().await.map_err(failed)?;
            answers.resize_with(batch.len(), || Ok(TokenWrite::Done));
            return Ok(answers);
        }
        Err(err) => {
            if let Err(err) = on_error(err) {
                return Err(CommitFailed(err.to_string()));
            }
        }
    }
    for pending in batch {
        let answer = insert_one(&txn, pending.row.clone(), on_error).await;
        if let Err(err) = &answer {
            // Not a constraint the caller must hear about: the transaction may be gone.
            return Err(CommitFailed(err.to_string()));
        }
        answers.push(answer);
    }
    txn.commit().await.map_err(failed)?;
    Ok(answers)
}
