//! The plans the database chooses for the token queries, for tests that assert them (the
//! `test-support` feature): a list page stays an index walk, whatever the table's size.

use sea_orm::{
    Condition, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, TransactionTrait,
};
use time::OffsetDateTime;
use tokenvault_domain::ports::TokenFilter;
use uuid::Uuid;

use crate::entity::token;
use crate::token_queries::{
    children_query, filter_condition, fingerprint_lookup, list_page, newest_first,
};

/// The plan the database chooses for the first page of a token list with `filter` (its
/// `parent` selects the children query), one line per plan step: SQLite's `EXPLAIN QUERY PLAN`
/// details, PostgreSQL's `EXPLAIN` lines (after `ANALYZE`, with sequential scans disabled, so
/// that small test tables show the plan large ones get). For tests that assert plans.
pub async fn explain_list_page(
    db: &DatabaseConnection,
    tenant_id: Uuid,
    filter: &TokenFilter,
    now: OffsetDateTime,
) -> Result<Vec<String>, sea_orm::DbErr> {
    use sea_orm::QueryTrait as _;
    let backend = db.get_database_backend();
    let condition =
        filter_condition(backend, tenant_id, filter, now).unwrap_or_else(Condition::all);
    let page = match &filter.parent {
        Some(parent) => {
            let (query, table) = children_query(backend, tenant_id, parent, condition);
            newest_first(query, table, 20, 0)
        }
        None => list_page(
            backend,
            token::Entity::find().filter(condition),
            filter,
            20,
            0,
        )
        .into_query(),
    };
    explain(db, backend.build(&page)).await
}

/// The plan of the lookup a deduplicated create makes (`find_by_fingerprint`), as
/// [`explain_list_page`] gives it.
pub async fn explain_fingerprint_lookup(
    db: &DatabaseConnection,
    tenant_id: Uuid,
    now: OffsetDateTime,
) -> Result<Vec<String>, sea_orm::DbErr> {
    use sea_orm::{QuerySelect as _, QueryTrait as _};
    let query = fingerprint_lookup(tenant_id, "card", "/", "FP", now).limit(1);
    explain(db, query.build(db.get_database_backend())).await
}

/// The plan of a search's first page for `condition`, as [`explain_list_page`] gives it.
pub async fn explain_search_page(
    database: &crate::Database,
    tenant_id: Uuid,
    condition: &tokenvault_domain::ports::SearchCondition,
    now: OffsetDateTime,
) -> Result<Vec<String>, sea_orm::DbErr> {
    use sea_orm::QueryTrait as _;
    let db = database.connection();
    let backend = db.get_database_backend();
    let visibility = tokenvault_domain::ports::Visibility::All;
    let Some(query) = crate::token_search::search_query(
        backend,
        database.reads().distributed(),
        tenant_id,
        Some(condition),
        &visibility,
        now,
    ) else {
        return Ok(Vec::new());
    };
    let page = crate::token_search::search_page(backend, query, true, 20, 0).into_query();
    explain(db, backend.build(&page)).await
}

/// `built`'s plan: SQLite's `EXPLAIN QUERY PLAN` details, PostgreSQL's `EXPLAIN` lines (after
/// `ANALYZE`, with sequential scans disabled).
async fn explain(
    db: &DatabaseConnection,
    built: sea_orm::Statement,
) -> Result<Vec<String>, sea_orm::DbErr> {
    use sea_orm::Statement;
    let backend = db.get_database_backend();
    if backend == sea_orm::DatabaseBackend::Postgres {
        let txn = db.begin().await?;
        txn.execute_unprepared("ANALYZE tokens; ANALYZE token_associations")
            .await?;
        txn.execute_unprepared("SET LOCAL enable_seqscan = off")
            .await?;
        let rows = txn
            .query_all_raw(Statement {
                sql: format!("EXPLAIN {}", built.sql),
                ..built
            })
            .await?;
        txn.rollback().await?;
        rows.iter()
            .map(|r| r.try_get::<String>("", "QUERY PLAN"))
            .collect()
    } else {
        let rows = db
            .query_all_raw(Statement {
                sql: format!("EXPLAIN QUERY PLAN {}", built.sql),
                ..built
            })
            .await?;
        rows.iter()
            .map(|r| r.try_get::<String>("", "detail"))
            .collect()
    }
}
