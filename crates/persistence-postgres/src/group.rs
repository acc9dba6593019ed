//! PostgreSQL's single token inserts, committed together: concurrent `POST /tokens` rows go in
//! as one statement and one commit, on a thread of their own ("pg-writer", its own runtime and
//! connection), and each caller is answered after that commit with its own outcome.
//!
//! Why: a tokenize cost PostgreSQL ~500 µs of CPU, most of it per statement and per commit
//! (the insert, its indexes, the count trigger, the WAL flush); a group pays those once.
//!
//! One statement for any group size, so it is prepared once: `INSERT … SELECT * FROM UNNEST`
//! of one array per column, `ON CONFLICT DO NOTHING RETURNING tenant_id, id`. A row whose
//! (tenant, id) is already in the group is held back and inserted alone after it, so a
//! returned pair stands for one caller. A row that is not returned hit a unique index (an id
//! taken, a dedup key stored, or a twin with the same dedup key in the group) and is inserted
//! again alone, which names the index it hits. A group the database refuses as a whole (a tenant deleted
//! meanwhile: its foreign key) is inserted row by row, so each caller gets its own answer. A
//! failure of the connection is every caller's error, never retried (the rows may have been
//! committed); the connection is then opened anew, and one idle for over a second is pinged
//! before it carries rows.
//!
//! Rows whose caller has left before their turn are not written.

use std::sync::LazyLock;
use std::time::Instant;

use sea_orm::sqlx::postgres::{PgConnectOptions, PgConnection};
use sea_orm::sqlx::{self, Connection};
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::TokenWrite;
use tokenvault_domain::token::StoredToken;
use tokio::sync::{Notify, mpsc, oneshot};

use crate::supervise::{self, CHECK_AFTER_IDLE, Supervised, within};
use tokenvault_persistence_shared::entity::token;
use tokenvault_persistence_shared::rows;
use tokenvault_persistence_shared::rows::token::{NOT_INSERTED, NewLists};
use tokenvault_persistence_shared::rows::write::pg_params;

mod citus;
mod write;

use write::{write_group, write_per_tenant};

/// Rows in one statement at most.
const MAX_GROUP: usize = 256;

/// The columns a new row is written with, the entity's in its order (`rows/token.rs`).
fn columns() -> String {
    rows::columns::<token::Column>(None, NOT_INSERTED)
}

/// Takes the row's tenant as its foreign key would (`KEY SHARE`), but skips a tenant whose row
/// is locked against it: only the last step of a tenant's delete does that, and every tenant's
/// inserts queue behind this writer, so a tenant being deleted has its rows left out at once
/// instead of holding the others'. A row left out this way is written alone ([`SINGLE_SQL`]),
/// which answers it [`TokenWrite::Missing`] (a 401, as a deleted tenant's foreign key is).
const TENANT_FREE: &str =
    "EXISTS (SELECT 1 FROM tenants t WHERE t.id = u.tenant_id FOR KEY SHARE SKIP LOCKED)";

/// Whether a row's tenant is live (neither gone nor a tombstone): asked only of a row
/// [`TENANT_FREE`] left out.
const TENANT_LIVE: &str =
    "SELECT EXISTS (SELECT 1 FROM tenants WHERE id = $1 AND deleted_at IS NULL)";

/// The group insert; rows left out by a unique index or by [`TENANT_FREE`] are not returned.
/// One array per column, each cast to its column's type, bound in the codec's order
/// (`rows::token::put_new`).
static GROUP_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO tokens ({cols}) SELECT u.* FROM UNNEST({arrays}) AS u({cols}) \
         WHERE {TENANT_FREE} ON CONFLICT DO NOTHING RETURNING tenant_id, id",
        cols = columns(),
        arrays = pg_params::<token::Column>(NOT_INSERTED, "[]"),
    )
});

/// One row alone, to learn which index it hits; no row written and no error: its tenant is
/// gone or being deleted ([`TENANT_FREE`]).
static SINGLE_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO tokens ({cols}) SELECT u.* FROM (VALUES ({values})) AS u({cols}) \
         WHERE {TENANT_FREE}",
        cols = columns(),
        values = pg_params::<token::Column>(NOT_INSERTED, ""),
    )
});

/// The writer's two statements: one PostgreSQL's, or Citus's.
#[derive(Clone, Copy)]
struct Sql {
    group: &'static str,
    single: &'static str,
    /// Citus's: each statement runs in a transaction of its own whose lock waits are bounded
    /// on the workers too ([`run_statement`]), and a tenant whose row such a wait ran into is
    /// asked whether it is being deleted ([`citus::locked_out`]).
    citus: bool,
}

impl Sql {
    fn of(citus: bool) -> Self {
        if citus {
            Self {
                group: citus::GROUP_SQL.as_str(),
                single: citus::SINGLE_SQL.as_str(),
                citus: true,
            }
        } else {
            Self {
                group: GROUP_SQL.as_str(),
                single: SINGLE_SQL.as_str(),
                citus: false,
            }
        }
    }
}

type Reply = oneshot::Sender<Result<TokenWrite, RepoError>>;

struct Pending {
    row: StoredToken,
    lists: NewLists,
    reply: Reply,
}

/// The writer of one database: hands rows to its thread.
#[derive(Debug)]
pub(crate) struct PgWriter {
    rows: mpsc::UnboundedSender<Pending>,
    thread: Supervised,
}

impl PgWriter {
    /// Starts the thread; it ends when the writer is dropped (every sender gone) or stopped.
    /// `per_tenant` (Citus): each group is written one statement per tenant.
    pub(crate) fn start(options: PgConnectOptions, per_tenant: bool) -> std::io::Result<Self> {
        let (rows, mut queue) = mpsc::unbounded_channel();
        let thread = supervise::spawn("pg-writer", move |rt, stop| {
            rt.block_on(run(&options, &mut queue, stop, per_tenant));
        })?;
        Ok(Self { rows, thread })
    }

    /// Stops the thread once the rows queued before are written; later inserts fail.
    pub(crate) async fn stop(&self, until: tokio::time::Instant) {
        self.thread.stop(until).await;
    }

    /// Inserts `row` with the rows waiting beside it; its own outcome, after the commit.
    pub(crate) async fn insert(
        &self,
        row: StoredToken,
        lists: NewLists,
    ) -> Result<TokenWrite, RepoError> {
        let (reply, answer) = oneshot::channel();
        self.rows
            .send(Pending { row, lists, reply })
            .map_err(|_| RepoError::Backend("the PostgreSQL writer has stopped".into()))?;
        answer
            .await
            .map_err(|_| RepoError::Backend("the PostgreSQL writer dropped an insert".into()))?
    }
}

async fn run(
    options: &PgConnectOptions,
    queue: &mut mpsc::UnboundedReceiver<Pending>,
    stop: &Notify,
    per_tenant: bool,
) {
    let mut conn: Option<PgConnection> = None;
    let mut idle_since = Instant::now();
    while let Some(first) = supervise::next(queue, stop).await {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match queue.try_recv() {
                Ok(next) => group.push(next),
                Err(_) => break,
            }
        }
        group.retain(|p| !p.reply.is_closed());
        if group.is_empty() {
            continue;
        }
        #[cfg(test)]
        assert!(
            group.iter().all(|p| p.row.id != tests::A_BUG),
            "a bug in a group"
        );
        // A connection idle for a while is checked first (a ping, before any row is sent): a
        // server restart or an administrator may have closed it, and a write is never retried.
        if idle_since.elapsed() > CHECK_AFTER_IDLE
            && let Some(live) = conn.as_mut()
            && let Err(e) = within(live.ping()).await
        {
            tracing::debug!(error = %e, "the idle PostgreSQL writer connection is gone; reconnecting");
            conn = None;
        }
        let live = match conn.as_mut() {
            Some(live) => live,
            None => match within(supervise::connect(options)).await {
                Ok(opened) => conn.insert(opened),
                Err(e) => {
                    answer_all(group, &e);
                    continue;
                }
            },
        };
        let started = Instant::now();
        let rows = group.len();
        let written = if per_tenant {
            write_per_tenant(live, group).await
        } else {
            write_group(live, group, Sql::of(false)).await
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, "PostgreSQL group insert failed; reconnecting");
            conn = None;
        }
        tracing::debug!(
            rows,
            elapsed_us = started.elapsed().as_micros(),
            "pg group commit"
        );
        idle_since = Instant::now();
    }
}

fn backend(e: &sqlx::Error) -> RepoError {
    let cause = format!("token insert: {e}").into();
    if tokenvault_persistence_shared::repo_error::sqlx_node_unreachable(e) {
        RepoError::Unavailable(cause)
    } else {
        RepoError::Backend(cause)
    }
}

fn answer_all(group: Vec<Pending>, e: &sqlx::Error) {
    for p in group {
        let _ = p.reply.send(Err(backend(e)));
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn each_array_and_value_is_cast_to_its_columns_type() {
        let group = GROUP_SQL.as_str();
        for cast in ["$1::uuid[]", "$5::text[]", "$6::bytea[]", "$16::bool[]"] {
            assert!(group.contains(cast), "{cast} in {group}");
        }
        assert!(
            !group.contains("$19"),
            "version is left to its default: {group}"
        );
        let single = SINGLE_SQL.as_str();
        for cast in [
            "$2::varchar,",
            "$12::timestamptz,",
            "$16::bool,",
            "$18::text)",
        ] {
            assert!(single.contains(cast), "{cast} in {single}");
        }
    }

    /// The id of a row whose group panics (a bug, as a test brings it about).
    pub(super) const A_BUG: &str = "tokenvault-test-a-bug";

    fn row(id: &str) -> StoredToken {
        tokenvault_persistence_shared::rows::token::sample(id)
    }

    #[tokio::test]
    async fn the_group_writer_carries_on_after_a_panic() {
        // Nothing answers on this port: a live writer fails each row at connecting, a stopped
        // one says it has stopped.
        let options = PgConnectOptions::new().host("127.0.0.1").port(1);
        let writer = PgWriter::start(options, false).unwrap();
        let cause = |e: RepoError| {
            std::error::Error::source(&e).map_or_else(String::new, ToString::to_string)
        };
        let panicked = cause(
            writer
                .insert(row(A_BUG), NewLists::of(&row(A_BUG)))
                .await
                .unwrap_err(),
        );
        assert!(panicked.contains("dropped an insert"), "{panicked}");
        for _ in 0..2 {
            let after = cause(
                writer
                    .insert(row("t"), NewLists::of(&row("t")))
                    .await
                    .unwrap_err(),
            );
            assert!(after.starts_with("token insert"), "{after}");
        }
    }
}
