//! Group commit for single-token inserts on SQLite.
//!
//! SQLite at `synchronous=FULL` syncs the disk on every commit, which bounds one-row commits to a
//! few thousand per second on this class of machine, while one transaction of a hundred rows costs
//! about the same as one row (docs/performance.md). Concurrent `POST /tokens` therefore hand their
//! row to one writer task, which takes every row waiting at that moment, writes them in one
//! transaction and answers each caller only after the commit returned: an acknowledged token is
//! as durable as before. A lone row is written in autocommit, as without the writer.
//!
//! The group goes in as one multi-row statement. A constraint violation (duplicate id or
//! fingerprint, a tenant deleted meanwhile) aborts only that statement and leaves the transaction
//! open; the rows then go in one statement each, so each caller learns its own outcome. Any other
//! failure (the database busy or gone, a failed commit) is the group's: every caller of the group
//! gets the error at once, nothing is retried behind their back (after a failed commit nobody
//! knows which rows stand).
//!
//! The writer runs on whichever runtime first needed it (an HTTP worker's). If that runtime
//! stops or the task dies, its callers get an error and the next insert starts a new writer.

use std::sync::{Arc, Mutex, PoisonError};

use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, TransactionTrait};
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::TokenWrite;
use tokio::sync::{mpsc, oneshot};

use crate::direct::DirectReads;
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

/// The handle to the writer task, started on first use (it needs the Tokio runtime) and again
/// whenever the last one is gone.
#[derive(Debug, Default)]
pub(crate) struct GroupCommit {
    queue: Mutex<Option<mpsc::Sender<Pending>>>,
}

/// The writer is gone (the runtime is shutting down).
#[derive(Debug, thiserror::Error)]
#[error("the token writer stopped")]
struct WriterStopped;

/// A failure of the group (not of one row), told to every caller of the group.
#[derive(Debug, thiserror::Error)]
#[error("group commit failed: {0}")]
struct CommitFailed(String);

fn stopped() -> RepoError {
    RepoError::Backend(Box::new(WriterStopped))
}

impl GroupCommit {
    /// Writes `row` with whatever other rows are waiting; returns after the commit.
    pub(crate) async fn insert(
        &self,
        db: &DatabaseConnection,
        turn: Option<&Arc<DirectReads>>,
        row: token::ActiveModel,
        on_error: fn(DbErr) -> Answer,
    ) -> Answer {
        let (reply, answer) = oneshot::channel();
        let mut pending = Pending { row, reply };
        // A writer that stopped between the check and the send hands the row back: one more try
        // with a fresh writer.
        for _ in 0..2 {
            match self.writer(db, turn, on_error).send(pending).await {
                Ok(()) => return answer.await.map_err(|_| stopped())?,
                Err(mpsc::error::SendError(back)) => pending = back,
            }
        }
        Err(stopped())
    }

    /// The running writer's queue, or a new writer's.
    fn writer(
        &self,
        db: &DatabaseConnection,
        turn: Option<&Arc<DirectReads>>,
        on_error: fn(DbErr) -> Answer,
    ) -> mpsc::Sender<Pending> {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        match queue.as_ref() {
            Some(tx) if !tx.is_closed() => tx.clone(),
            _ => {
                let (tx, rx) = mpsc::channel(QUEUE);
                tokio::spawn(run(db.clone(), turn.cloned(), rx, on_error));
                *queue = Some(tx.clone());
                tx
            }
        }
    }
}

async fn run(
    db: DatabaseConnection,
    turn: Option<Arc<DirectReads>>,
    mut rx: mpsc::Receiver<Pending>,
    on_error: fn(DbErr) -> Answer,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        // Rows that arrive while waiting for the turn join this group.
        let _turn = match &turn {
            Some(file) => Some(file.bulk_write_turn().await),
            None => None,
        };
        while batch.len() < MAX_BATCH
            && let Ok(more) = rx.try_recv()
        {
            batch.push(more);
        }
        if batch.len() == 1 {
            for pending in batch.drain(..) {
                let answer = insert_one(&db, pending.row, on_error).await;
                let _ = pending.reply.send(answer);
            }
            continue;
        }
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
            }
            Err(err) => {
                tracing::warn!(error = %err, rows = batch.len(), "group commit failed");
                for pending in batch.drain(..) {
                    let answer = Err(RepoError::Backend(Box::new(CommitFailed(err.0.clone()))));
                    let _ = pending.reply.send(answer);
                }
            }
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
            // Not a constraint of this row (those are answers): the group's failure.
            return Err(CommitFailed(err.to_string()));
        }
        answers.push(answer);
    }
    txn.commit().await.map_err(failed)?;
    Ok(answers)
}
