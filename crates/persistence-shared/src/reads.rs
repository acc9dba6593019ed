//! Where a repository's point reads run: on PostgreSQL, the adapter's own connections
//! (`postgres/direct.rs`), which go back to their idle list without the `Sync` round trip sqlx 0.9
//! sends every time a pooled connection is released; elsewhere SeaORM's pool.
//!
//! [`Reads`] is a SeaORM connection, so a query reads `.one(&self.reads)` as it read
//! `.one(&self.db)`. Only plain `SELECT`s go to the direct connections, where a statement that
//! failed on a reused connection is tried again: anything else (an `INSERT … RETURNING`, which
//! SeaORM sends as a query, or a locking read) goes to the pool, as do executes and
//! transactions, which are begun on the pool and never on this. Each direct statement sees what
//! was committed before it started (read committed), so a read after a write the caller was
//! told about sees that write, as on the pool.
//!
//! For point reads only (a row by its key, at most the 100 tokens of one detokenize): the
//! direct connections are as many as the pool's and every request's key read waits for one, so
//! lists, pages and counts, whose time grows with a tenant's data, stay on the pool.

use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DbBackend, DbErr, ExecResult, QueryResult, Statement,
};

/// A database's own connections for plain `SELECT`s (PostgreSQL's, `postgres/direct.rs`),
/// which may run a statement twice.
#[async_trait]
pub trait DirectQueries: Send + Sync + std::fmt::Debug {
    /// The first row `stmt` selects.
    async fn query_one(&self, stmt: &Statement) -> Result<Option<QueryResult>, DbErr>;
    /// Every row `stmt` selects.
    async fn query_all(&self, stmt: &Statement) -> Result<Vec<QueryResult>, DbErr>;
}

/// Reads of one database: its own connections where it has them, else the pool.
#[derive(Clone, Debug)]
pub struct Reads {
    db: DatabaseConnection,
    pg: Option<Arc<dyn DirectQueries>>,
    /// A Citus database (`PgBackend`, `postgres/backend.rs`).
    distributed: bool,
}

impl Reads {
    /// The reads of `db`, on PostgreSQL through `pg`.
    pub fn new(
        db: DatabaseConnection,
        pg: Option<Arc<dyn DirectQueries>>,
        distributed: bool,
    ) -> Self {
        Self {
            db,
            pg,
            distributed,
        }
    }

    /// Whether this is a Citus database (`PgBackend`, `postgres/backend.rs`).
    pub fn distributed(&self) -> bool {
        self.distributed
    }

    /// The direct connections when `stmt` may run (and be tried again) there.
    fn direct_for(&self, stmt: &Statement) -> Option<&dyn DirectQueries> {
        self.pg.as_deref().filter(|_| plain_select(&stmt.sql))
    }
}

/// A `SELECT` that neither writes nor locks: safe to run twice. Every locking clause (`FOR
/// UPDATE`, `FOR NO KEY UPDATE`, `FOR SHARE`, `FOR KEY SHARE`) starts with the word `FOR`, so
/// a statement holding that word anywhere goes to the pool: one pass over the text, which runs
/// on every point read (four searches for the whole clauses were 3 % of the server's CPU under
/// the PostgreSQL tokenize load).
fn plain_select(sql: &str) -> bool {
    let sql = sql.trim_start().as_bytes();
    let has_for = sql.windows(5).any(|w| {
        w[0].is_ascii_whitespace()
            && w[4].is_ascii_whitespace()
            && w[1..4].eq_ignore_ascii_case(b"FOR")
    });
    sql.get(..6)
        .is_some_and(|head| head.eq_ignore_ascii_case(b"SELECT"))
        && !has_for
}

#[async_trait]
impl ConnectionTrait for Reads {
    fn get_database_backend(&self) -> DbBackend {
        self.db.get_database_backend()
    }

    async fn execute_raw(&self, stmt: Statement) -> Result<ExecResult, DbErr> {
        self.db.execute_raw(stmt).await
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        self.db.execute_unprepared(sql).await
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        match self.direct_for(&stmt) {
            Some(pg) => pg.query_one(&stmt).await,
            None => self.db.query_one_raw(stmt).await,
        }
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        match self.direct_for(&stmt) {
            Some(pg) => pg.query_all(&stmt).await,
            None => self.db.query_all_raw(stmt).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::plain_select;

    #[test]
    fn only_plain_selects_go_to_the_direct_connections() {
        assert!(plain_select(
            r#"SELECT "tokens"."id" FROM "tokens" WHERE "id" = $1 LIMIT $2"#
        ));
        assert!(plain_select("  select 1"));
        for not in [
            r#"INSERT INTO "tokens" ("id") VALUES ($1) RETURNING "id""#,
            r#"UPDATE "tokens" SET "data" = $1 RETURNING "id""#,
            r#"DELETE FROM "tokens" RETURNING "id""#,
            r#"SELECT "id" FROM "tokens" WHERE "id" = $1 FOR UPDATE"#,
            r#"SELECT "id" FROM "tokens" FOR SHARE"#,
            r#"SELECT "id" FROM "tokens" FOR NO KEY UPDATE"#,
            "select id from tokens\nfor key share",
            "SELECT id FROM tokens FOR\tUPDATE SKIP LOCKED",
            "WITH x AS (DELETE FROM tokens RETURNING id) SELECT * FROM x",
            "SEL",
            "",
        ] {
            assert!(!plain_select(not), "{not}");
        }
    }
}
