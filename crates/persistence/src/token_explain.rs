//! The plans the database chooses for the token queries, for tests that assert them (the
//! `test-support` feature): a list page stays an index walk, whatever the table's size.

use sea_orm::{
    Condition, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, TransactionTrait,
};
use time::OffsetDateTime;
use tokenvault_domain::ports::TokenFilter;
use uuid::Uuid;

use tokenvault_persistence_shared::entity::token;
use tokenvault_persistence_shared::token_queries::{
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
    let Some(query) = tokenvault_persistence_shared::token_search::search_query(
        backend,
        database.reads().distributed(),
        tenant_id,
        Some(condition),
        &visibility,
        now,
    ) else {
        return Ok(Vec::new());
    };
    let page =
        tokenvault_persistence_shared::token_search::search_page(backend, query, true, 20, 0)
            .into_query();
    explain(db, backend.build(&page)).await
}

/// `built`'s plan: SQLite's `EXPLAIN QUERY PLAN` details, PostgreSQL's `EXPLAIN` lines (after
/// `ANALYZE`, with sequential scans disabled). On Citus the lines show the coordinator's
/// tasks (`Task Count: 1` for a statement on one tenant's shards) and each task's plan on its
/// worker, with the shard ids taken off the names (`tokens_102040` reads `tokens`).
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
        // On Citus the plan that reads is each worker's: the setting goes along there too.
        let citus = txn
            .query_one_raw(Statement::from_string(
                backend,
                "SELECT 1 FROM pg_extension WHERE extname = 'citus'",
            ))
            .await?
            .is_some();
        if citus {
            txn.execute_unprepared("SET LOCAL citus.propagate_set_commands = 'local'")
                .await?;
        }
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
            .map(|r| {
                r.try_get::<String>("", "QUERY PLAN").map(|line| {
                    if citus {
                        without_shard_ids(&line)
                    } else {
                        line
                    }
                })
            })
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

/// `line` with each shard id (an underscore and six digits or more, ending a name) taken off.
fn without_shard_ids(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find('_') {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        let digits = from[1..].bytes().take_while(u8::is_ascii_digit).count();
        let ends_name = from[1 + digits..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        if digits >= 6 && ends_name {
            rest = &from[1 + digits..];
        } else {
            out.push('_');
            rest = &from[1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::without_shard_ids;

    #[test]
    fn shard_ids_are_taken_off_names_only() {
        assert_eq!(
            without_shard_ids(
                "->  Index Scan using tokens_pkey_102013 on tokens_102013 tokens  (cost=0.1..2)"
            ),
            "->  Index Scan using tokens_pkey on tokens tokens  (cost=0.1..2)"
        );
        assert_eq!(
            without_shard_ids("idx_tokens_tenant_created_102040"),
            "idx_tokens_tenant_created"
        );
        for kept in ["token_search_terms", "x_12345 y", "a_1234567b", "tail_"] {
            assert_eq!(without_shard_ids(kept), kept);
        }
    }
}
