//! PostgreSQL's key-and-token reads (`GET /tokens/{id}`: the key's application, its tenant's
//! settings and the token) answered together: all the reads waiting at that moment in one
//! statement.
//!
//! Why: a point read costs PostgreSQL little for its row and much per statement (executor
//! start, a round trip and a wake-up on each side). Measured with `pgbench` on this machine,
//! the key-and-token read ran 50,800 statements a second alone and 29,100 of eight rows each
//! (233,000 reads), and under a detokenize load PostgreSQL's backends spent ~60 % of a core
//! on these reads (docs/performance-journal.md, fourteenth session).
//!
//! How: a caller queues its read; while fewer than [`MAX_RUNNING`] statements are running, it
//! spawns a task that takes up to [`MAX_BATCH`] queued reads, runs them as one statement
//! (`UNNEST … WITH ORDINALITY`, the ordinal naming the caller), answers each, and goes on
//! while reads are queued. A lone read therefore goes at once; under load, reads queue while
//! the statements ahead run, and the next statement takes them all. The task owns the reads
//! it took; a read whose caller left (its client disconnected) before its turn is not run. A
//! failed statement is the error of each of its callers (after `PgDirect`'s one retry on a new
//! connection), and a read waits at most [`MAX_WAIT`]. The queue holds at most one read per
//! request in flight, as the connection semaphore's waiters did before.
//!
//! What each row may see is the single read's: a key's tenant's live token by that id, for a
//! private application only (`postgres/keyed_read.rs`); the rows are matched to their callers by the
//! ordinal alone.
//!
//! A key this server keeps in memory (`key_cache.rs`) is not read again: its request asks the
//! group for the token alone, by the kept application's tenant ([`KeyGroup::token`]); a batch
//! holding both kinds runs one statement of each. A profile of the warm react put a fifth of
//! the machine in PostgreSQL, most of it the key's joins to `applications` and `tenants`,
//! answered again for every token though the server already held them.
//!
//! Only this read is grouped. The key read alone (every other request's authentication) was
//! grouped too at first and cost the tokenize load a quarter of its rate (12,700 → 9,200 req/s):
//! its requests then moved in step from the grouped reads to the group insert (`postgres/group.rs`)
//! and back, so the two stages took turns instead of overlapping.

use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use sea_orm::sqlx;
use sea_orm::{FromQueryResult, QueryResult};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::{Beside, KeyRead};
use tokenvault_domain::token::StoredToken;
use tokio::sync::oneshot;
use uuid::Uuid;

use crate::direct::PgDirect;
use crate::keyed_read::{application_and_settings, application_and_settings_of, prefixed};
use tokenvault_persistence_shared::entity::token;
use tokenvault_persistence_shared::repo_error::repo_err;
use tokenvault_persistence_shared::stamp::stamp;

/// Reads in one statement at most.
const MAX_BATCH: usize = 64;
/// Statements running at once at most (each on its own connection).
const MAX_RUNNING: usize = 2;
/// The longest a read waits for its answer, as long as a single read waits for a connection
/// (`postgres/direct.rs`): a stalled statement fails its callers instead of holding them.
const MAX_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// One row per read that found its key: `q_n` its ordinal (from 1), the application and
/// settings, and the token when it is the key's tenant's, live, and the key a private
/// application's.
static SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT q.n AS q_n, {}, {} \
         FROM UNNEST($1::varchar[], $2::varchar[], $3::timestamptz[]) \
         WITH ORDINALITY AS q(key_hash, token_id, at, n) \
         JOIN applications a ON a.key_hash = q.key_hash \
         JOIN tenants s ON s.id = a.tenant_id \
         LEFT JOIN tokens t ON a.app_type = 'private' \
         AND t.tenant_id = a.tenant_id AND t.id = q.token_id \
         AND (t.expires_at IS NULL OR t.expires_at > q.at) \
         WHERE s.deleted_at IS NULL",
        application_and_settings(),
        prefixed::<token::Column>("t"),
    )
});

/// One row per token read that found its live token: `q_n` its ordinal (from 1) and the token,
/// of the tenant named with it (the kept key's).
static TOKEN_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT q.n AS q_n, {} \
         FROM UNNEST($1::uuid[], $2::varchar[], $3::timestamptz[]) \
         WITH ORDINALITY AS q(tenant_id, token_id, at, n) \
         JOIN tokens t ON t.tenant_id = q.tenant_id AND t.id = q.token_id \
         AND (t.expires_at IS NULL OR t.expires_at > q.at)",
        prefixed::<token::Column>("t"),
    )
});

/// What a read of either kind found.
enum Found {
    /// The key's application, settings and token.
    Keyed(Option<Box<KeyRead>>),
    /// The token alone.
    Token(Option<Box<StoredToken>>),
}

type Answer = Result<Found, RepoError>;

/// What a read asks for beside its token.
enum Ask {
    /// The application holding this key (hex), whose tenant's token is read.
    Key(String),
    /// Nothing: the token of this tenant, whose key the caller already holds.
    Token(Uuid),
}

/// The reads waiting for a statement, and how many statements run, of one database.
pub(crate) struct KeyGroup {
    pg: Arc<PgDirect>,
    state: Mutex<State>,
}

impl std::fmt::Debug for KeyGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyGroup").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    queue: Vec<Pending>,
    running: usize,
}

struct Pending {
    ask: Ask,
    token_id: String,
    /// The time the token's expiry is judged at.
    at: OffsetDateTime,
    reply: oneshot::Sender<Answer>,
}

impl KeyGroup {
    /// The reads of the database behind `pg`.
    pub(crate) fn new(pg: Arc<PgDirect>) -> Self {
        Self {
            pg,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The application holding `key_hash` (hex), its tenant's settings and that tenant's token
    /// `token_id` if it is live at `at`; `None` for an unknown key or a deleted tenant's.
    pub(crate) async fn read(
        self: &Arc<Self>,
        key_hash: String,
        token_id: &str,
        at: OffsetDateTime,
    ) -> Result<Option<KeyRead>, RepoError> {
        match self.queue(Ask::Key(key_hash), token_id, at).await? {
            Found::Keyed(read) => Ok(read.map(|read| *read)),
            Found::Token(_) => Err(RepoError::Backend("a key read answered as a token".into())),
        }
    }

    /// Tenant `tenant_id`'s token `token_id` if it is live at `at`: for a caller that holds
    /// the key's application already (from memory), so nothing of the key is read again.
    pub(crate) async fn token(
        self: &Arc<Self>,
        tenant_id: Uuid,
        token_id: &str,
        at: OffsetDateTime,
    ) -> Result<Option<StoredToken>, RepoError> {
        match self.queue(Ask::Token(tenant_id), token_id, at).await? {
            Found::Token(token) => Ok(token.map(|token| *token)),
            Found::Keyed(_) => Err(RepoError::Backend("a token read answered as a key".into())),
        }
    }

    async fn queue(self: &Arc<Self>, ask: Ask, token_id: &str, at: OffsetDateTime) -> Answer {
        let (reply, answer) = oneshot::channel();
        let lead = {
            let mut state = self.state();
            state.queue.push(Pending {
                ask,
                token_id: token_id.to_owned(),
                at,
                reply,
            });
            let lead = state.running < MAX_RUNNING;
            if lead {
                state.running += 1;
            }
            lead
        };
        if lead {
            // The place is the task's from here: dropped unpolled (its runtime stopping), the
            // guard still gives it back.
            tokio::spawn(drain(Running {
                group: Arc::clone(self),
                done: false,
            }));
        }
        match tokio::time::timeout(MAX_WAIT, answer).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(RepoError::Backend("the key read was abandoned".into())),
            Err(_) => Err(RepoError::Backend(
                "the key read waited too long for its statement".into(),
            )),
        }
    }
}

/// A running statement's place, given back when its task ends. A task that ends otherwise (a
/// panic, its runtime stopping) also drops the reads still queued: their callers get an error
/// at once rather than at [`MAX_WAIT`].
struct Running {
    group: Arc<KeyGroup>,
    done: bool,
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.done {
            let mut state = self.group.state();
            state.running -= 1;
            state.queue.clear();
        }
    }
}

/// Runs the queued reads, [`MAX_BATCH`] at a time, until none is left.
async fn drain(mut running: Running) {
    loop {
        let batch: Vec<Pending> = {
            let mut state = running.group.state();
            if state.queue.is_empty() {
                // In the same critical section as the look: a read queued after it finds a
                // free place and starts a task of its own.
                state.running -= 1;
                running.done = true;
                return;
            }
            // Reads whose caller left (its client disconnected) are not run.
            state.queue.retain(|p| !p.reply.is_closed());
            let n = state.queue.len().min(MAX_BATCH);
            state.queue.drain(..n).collect()
        };
        if batch.is_empty() {
            continue;
        }
        answer(&running.group.pg, batch).await;
    }
}

/// Runs one statement per kind of read in `batch` and answers each of its callers.
async fn answer(pg: &PgDirect, batch: Vec<Pending>) {
    let (mut keys, mut keyed, mut tenants, mut tokens) = (vec![], vec![], vec![], vec![]);
    for pending in batch {
        match &pending.ask {
            Ask::Key(key_hash) => {
                keys.push(key_hash.clone());
                keyed.push(pending);
            }
            Ask::Token(tenant_id) => {
                tenants.push(*tenant_id);
                tokens.push(pending);
            }
        }
    }
    if !keyed.is_empty() {
        let (ids, ats) = tokens_and_times(&keyed);
        let rows = pg
            .fetch_query(
                || {
                    sqlx::query(sqlx::AssertSqlSafe(SQL.as_str()))
                        .bind(keys.clone())
                        .bind(ids.clone())
                        .bind(ats.clone())
                },
                true,
            )
            .await;
        reply(keyed, rows, keyed_found, || Found::Keyed(None));
    }
    if !tokens.is_empty() {
        let (ids, ats) = tokens_and_times(&tokens);
        let rows = pg
            .fetch_query(
                || {
                    sqlx::query(sqlx::AssertSqlSafe(TOKEN_SQL.as_str()))
                        .bind(tenants.clone())
                        .bind(ids.clone())
                        .bind(ats.clone())
                },
                true,
            )
            .await;
        reply(tokens, rows, token_found, || Found::Token(None));
    }
}

fn tokens_and_times(batch: &[Pending]) -> (Vec<String>, Vec<OffsetDateTime>) {
    batch
        .iter()
        .map(|p| (p.token_id.clone(), stamp(p.at)))
        .unzip()
}

/// Answers each read of `batch` with its row of `rows` (matched by ordinal), or `missing`.
fn reply(
    batch: Vec<Pending>,
    rows: Result<Vec<QueryResult>, sea_orm::DbErr>,
    found: impl Fn(&Pending, &QueryResult) -> Answer,
    missing: impl Fn() -> Found,
) {
    let rows = match rows {
        Ok(rows) => rows,
        Err(e) => {
            let message = repo_err(e).to_string();
            tracing::warn!(error = %message, reads = batch.len(), "a batch of key reads failed");
            return fail(batch, &message);
        }
    };
    let mut answers: Vec<Answer> = batch.iter().map(|_| Ok(missing())).collect();
    for row in &rows {
        let at = row
            .try_get::<i64>("", "q_n")
            .ok()
            .and_then(|n| usize::try_from(n).ok())
            .and_then(|n| n.checked_sub(1))
            .filter(|&i| i < answers.len());
        let Some(i) = at else {
            // Never expected; a row that names no caller must not turn into "unknown key".
            tracing::error!(reads = batch.len(), "a key read row without its ordinal");
            return fail(batch, "a key read row without its ordinal");
        };
        answers[i] = found(&batch[i], row);
    }
    for (pending, answer) in batch.into_iter().zip(answers) {
        // A caller that left has dropped its receiver: nothing to do.
        let _ = pending.reply.send(answer);
    }
}

/// Answers every read of `batch` with the same failure.
fn fail(batch: Vec<Pending>, message: &str) {
    for pending in batch {
        let _ = pending
            .reply
            .send(Err(RepoError::Backend(message.to_owned().into())));
    }
}

/// A key read's row, once it is seen to be of the key asked for: the ordinals make it so, and a
/// row that was not would be kept in memory as that key's (attack review of 3cfac8c).
fn keyed_found(pending: &Pending, row: &QueryResult) -> Answer {
    let key_hash: String = row.try_get("a_", "key_hash").map_err(repo_err)?;
    if !matches!(&pending.ask, Ask::Key(asked) if *asked == key_hash) {
        return Err(mismatch());
    }
    let read = keyed_row(row)?;
    if matches!(&read.token, Beside::Read(Some(token)) if token.id != pending.token_id) {
        return Err(mismatch());
    }
    Ok(Found::Keyed(Some(Box::new(read))))
}

/// A token read's row, once it is seen to be of the tenant and id asked for.
fn token_found(pending: &Pending, row: &QueryResult) -> Answer {
    let token = token_of(row)?;
    if let Some(token) = &token
        && (!matches!(pending.ask, Ask::Token(tenant) if tenant == token.tenant_id)
            || token.id != pending.token_id)
    {
        return Err(mismatch());
    }
    Ok(Found::Token(token.map(Box::new)))
}

fn mismatch() -> RepoError {
    tracing::error!("a grouped key read answered a row of another read");
    RepoError::Backend("a grouped key read answered a row of another read".into())
}

/// One row's application, settings and token (when found: else its columns are NULL).
fn keyed_row(row: &QueryResult) -> Result<KeyRead, RepoError> {
    let (application, settings) = application_and_settings_of(row)?;
    Ok(KeyRead {
        token: Beside::Read(token_of(row)?),
        ..KeyRead::alone(application, settings)
    })
}

/// The row's token, under `t_` (`None` when its columns are NULL).
fn token_of(row: &QueryResult) -> Result<Option<StoredToken>, RepoError> {
    let found: Option<String> = row.try_get("t_", "id").map_err(repo_err)?;
    match found {
        Some(_) => Ok(Some(tokenvault_persistence_shared::rows::token::to_domain(
            token::Model::from_query_result(row, "t_").map_err(repo_err)?,
        )?)),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::{SQL, TOKEN_SQL};

    #[test]
    fn each_read_sees_only_its_own_keys_tenant_and_live_token() {
        let sql = SQL.as_str();
        for needed in [
            "WITH ORDINALITY",
            "a.key_hash = q.key_hash",
            "t.tenant_id = a.tenant_id AND t.id = q.token_id",
            "a.app_type = 'private'",
            "t.expires_at > q.at",
            "s.deleted_at IS NULL",
        ] {
            assert!(sql.contains(needed), "{needed} in {sql}");
        }
        assert!(
            !sql.contains("data_key"),
            "never the tenant's wrapped key: {sql}"
        );
    }

    #[test]
    fn a_token_read_sees_only_its_tenants_live_token() {
        let sql = TOKEN_SQL.as_str();
        for needed in [
            "WITH ORDINALITY",
            "t.tenant_id = q.tenant_id AND t.id = q.token_id",
            "t.expires_at > q.at",
        ] {
            assert!(sql.contains(needed), "{needed} in {sql}");
        }
    }
}
