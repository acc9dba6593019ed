//! SQLite's token engine (`tokens.rs`): the file's writer thread for single inserts
//! (`writer.rs`, `group_commit.rs`), the tokens created per month counted in a batch's own
//! transaction (`token_months.rs`: SQLite has no statement triggers), point reads and a search
//! page found through terms on the calling thread (`direct.rs`), through SeaORM's pool while
//! the file is locked for the moment.

use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::sea_query::{Alias, Expr, Query, SqliteQueryBuilder};
use sea_orm::{DatabaseBackend, DatabaseConnection, DatabaseTransaction, Select};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::ports::{TokenWrite, month_of};
use tokenvault_domain::token::StoredToken;
use uuid::Uuid;

use crate::direct::{DirectReads, bound_time};
use crate::token_months::Created;
use tokenvault_persistence_shared::backend::TokenEngine;
use tokenvault_persistence_shared::entity::token;
use tokenvault_persistence_shared::repo_error::repo_err;
use tokenvault_persistence_shared::rows::token::to_domain;
use tokenvault_persistence_shared::token_queries::{live_token, live_tokens};
use tokenvault_persistence_shared::token_search::search_page;

/// A SQLite file's token engine.
#[derive(Debug)]
pub(crate) struct SqliteTokens {
    direct: Arc<DirectReads>,
    pool: DatabaseConnection,
}

impl SqliteTokens {
    /// The engine of the file behind `direct`, `pool` standing in for its reads while it is
    /// locked.
    pub(crate) fn new(direct: Arc<DirectReads>, pool: DatabaseConnection) -> Self {
        Self { direct, pool }
    }
}

#[async_trait]
impl TokenEngine for SqliteTokens {
    async fn insert(&self, t: &StoredToken) -> Result<TokenWrite, RepoError> {
        self.direct.insert_token(t.clone()).await
    }

    /// One writer at a time: statements of 100 rows stay far below SQLite's variable limit.
    fn rows_per_statement(&self) -> usize {
        100
    }

    async fn count_created(
        &self,
        txn: &DatabaseTransaction,
        tokens: &[StoredToken],
    ) -> Result<(), RepoError> {
        let mut created = Created::default();
        for t in tokens {
            created.add(t.tenant_id, &month_of(t.created_at));
        }
        created.write_seaorm(txn).await.map_err(repo_err)
    }

    async fn get(
        &self,
        tenant_id: Uuid,
        id: &str,
        now: OffsetDateTime,
    ) -> Result<Option<StoredToken>, RepoError> {
        if let Some(found) = self.direct.live_token(tenant_id, id, now) {
            return found;
        }
        live_token(&self.pool, tenant_id, id, now).await
    }

    async fn get_many(
        &self,
        tenant_id: Uuid,
        ids: &[String],
        now: OffsetDateTime,
    ) -> Result<Vec<StoredToken>, RepoError> {
        if let Some(found) = self.direct.live_tokens(tenant_id, ids, now) {
            return found;
        }
        live_tokens(&self.pool, tenant_id, ids, now).await
    }

    fn term_page(
        &self,
        query: &Select<token::Entity>,
        page: PageRequest,
    ) -> Option<Result<Page<StoredToken>, RepoError>> {
        direct_page(&self.direct, query, page)
    }

    fn distributed(&self) -> bool {
        false
    }

    async fn delete_expired(&self, now: OffsetDateTime) -> Result<u64, RepoError> {
        tokenvault_persistence_shared::tokens::delete_expired(&self.pool, now).await
    }
}

/// The most matches a search page reads on the calling thread.
const DIRECT_MATCHES: u64 = 1_000;

/// A search page whose matches are found through a term ([`SearchCondition::found_through_terms`]), run on SQLite's
/// direct connections on the calling thread (`sqlite/direct.rs`): the count and the page are two
/// index lookups of a few rows each, which the driver's worker thread would hand over twice
/// each. `None` when the database was locked, or when more than [`DIRECT_MATCHES`] tokens match
/// (the caller runs them on the pool instead, off the calling thread).
pub(crate) fn direct_page(
    direct: &DirectReads,
    query: &sea_orm::Select<token::Entity>,
    page: PageRequest,
) -> Option<Result<Page<StoredToken>, RepoError>> {
    use sea_orm::{QuerySelect as _, QueryTrait as _};
    // Counted up to one past the bound: a term many tokens hold is neither sorted nor counted
    // here (attack review of 940c02f).
    let count = Query::select()
        .expr(Expr::cust("COUNT(*)"))
        .from_subquery(
            query.clone().limit(DIRECT_MATCHES + 1).into_query(),
            Alias::new("matched"),
        )
        .to_owned()
        .build(SqliteQueryBuilder);
    let rows = search_page(
        DatabaseBackend::Sqlite,
        query.clone(),
        true,
        page.size,
        page.offset(),
    )
    .into_query()
    .build(SqliteQueryBuilder);
    let bound = |values: &sea_orm::sea_query::Values| {
        values
            .0
            .iter()
            .map(sqlite_value)
            .collect::<Result<Vec<_>, _>>()
    };
    let (count_values, row_values) = match (bound(&count.1), bound(&rows.1)) {
        (Ok(c), Ok(r)) => (c, r),
        (Err(e), _) | (_, Err(e)) => return Some(Err(e)),
    };
    let total_items = match direct.count_where(&count.0, &count_values)? {
        Ok(n) if n > DIRECT_MATCHES => return None,
        Ok(n) => n,
        Err(e) => return Some(Err(e)),
    };
    let models = match direct.tokens_where(&rows.0, &row_values)? {
        Ok(models) => models,
        Err(e) => return Some(Err(e)),
    };
    Some(
        models
            .into_iter()
            .map(to_domain)
            .collect::<Result<Vec<_>, _>>()
            .map(|items| Page {
                items,
                total_items,
                request: page,
            }),
    )
}

/// A value as SeaORM binds it on SQLite: a UUID as its 16 bytes, a time as its stamped RFC
/// 3339 text (`direct::bound_time`).
fn sqlite_value(value: &sea_orm::Value) -> Result<rusqlite::types::Value, RepoError> {
    use rusqlite::types::Value as S;
    use sea_orm::Value as V;
    Ok(match value {
        V::Bool(b) => b.map_or(S::Null, |b| S::Integer(i64::from(b))),
        V::Int(i) => i.map_or(S::Null, |i| S::Integer(i64::from(i))),
        V::BigInt(i) => i.map_or(S::Null, S::Integer),
        // LIMIT and OFFSET: a page's size and offset, far below `i64::MAX`.
        V::BigUnsigned(u) => u.map_or(S::Null, |u| {
            S::Integer(i64::try_from(u).unwrap_or(i64::MAX))
        }),
        V::String(s) => s.clone().map_or(S::Null, S::Text),
        V::Char(c) => c.map_or(S::Null, |c| S::Text(c.to_string())),
        V::Bytes(b) => b.clone().map_or(S::Null, S::Blob),
        V::Uuid(u) => u.map_or(S::Null, |u| S::Blob(u.as_bytes().to_vec())),
        V::TimeDateTimeWithTimeZone(t) => match t {
            Some(t) => S::Text(bound_time(*t)?),
            None => S::Null,
        },
        other => {
            return Err(RepoError::Backend(
                format!("a search cannot bind {other:?} directly").into(),
            ));
        }
    })
}
