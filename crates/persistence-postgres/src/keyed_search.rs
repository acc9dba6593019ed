//! PostgreSQL's key-and-search read (`POST /tokens/search` with a key that searched before:
//! `Authenticator::authenticate_searching`): the key's application, its tenant's settings and
//! the live tokens the search matches, in one statement.
//!
//! Why: a search by a blind index term is a few index lookups, and on PostgreSQL a request paid
//! two statements for it (the key, then the page), each a round trip with a wake-up on both
//! sides; measured, the search ran at a third of `GET /tokens/{id}`'s rate, which reads its key
//! and token in one (docs/performance-journal.md, "Token search").
//!
//! What a row may see: the tokens are joined only for a private application's key (the only
//! type that may hold `token:search`, decisions §4) and only in the tenant the search was
//! hashed for, which must be the key's own; the caller's visibility is applied by the use
//! case. At most `limit + 1` rows are read, unordered (then sorted here), so the read costs
//! the same for a term a million tokens hold: more than `limit` matches, and nothing of them
//! is kept (the use case searches again with the visibility in the query).

use sea_orm::sea_query::{Expr, PostgresQueryBuilder, Value};
use sea_orm::{
    DatabaseBackend, FromQueryResult, QueryFilter, QueryResult, QuerySelect, QueryTrait, Statement,
};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::permission::ApplicationType;
use tokenvault_domain::ports::{Beside, KeyRead, SearchAhead, SearchCondition, Visibility};
use uuid::Uuid;

use crate::direct::PgDirect;
use crate::keyed_read::{application_and_settings, application_and_settings_of};
use tokenvault_persistence_shared::entity::token;
use tokenvault_persistence_shared::repo_error::repo_err;
use tokenvault_persistence_shared::token_search::search_query;

/// The statement: the key's application and settings, and beside them each matching token of
/// the key's tenant (`t_`-less columns: the tokens' own names), or one row without a token.
fn statement(
    key_hash: String,
    tenant_id: Uuid,
    condition: &SearchCondition,
    limit: u64,
    now: OffsetDateTime,
) -> Option<Statement> {
    // Never on Citus (`PgApplications::by_key_also`).
    let matches = search_query(
        DatabaseBackend::Postgres,
        false,
        tenant_id,
        Some(condition),
        &Visibility::All,
        now,
    )?
    .filter(Expr::cust(
        "\"tokens\".\"tenant_id\" = a.tenant_id AND a.app_type = 'private'",
    ));
    // No order here: at most `limit + 1` matches are read, however many the term has, and
    // sorted once read (`key_and_search`); more than `limit`, and they are not used.
    let (inner, mut values) = matches
        .limit(limit.saturating_add(1))
        .into_query()
        .build(PostgresQueryBuilder);
    values.0.push(Value::from(key_hash));
    let sql = format!(
        "SELECT {}, t.* FROM applications a JOIN tenants s ON s.id = a.tenant_id \
         LEFT JOIN LATERAL ({inner}) t ON TRUE \
         WHERE a.key_hash = ${} AND s.deleted_at IS NULL",
        application_and_settings(),
        values.0.len(),
    );
    Some(Statement::from_sql_and_values(
        DatabaseBackend::Postgres,
        sql,
        values,
    ))
}

/// The application holding `key_hash` (hex), its tenant's settings and, for a private
/// application of `tenant_id`, the live tokens `condition` matches when at most `limit` do;
/// `None` for an unknown key or a deleted tenant's.
/// `None` when the condition makes no statement (the key is then read alone).
pub(crate) async fn key_and_search(
    pg: &PgDirect,
    key_hash: String,
    search: &SearchAhead,
    now: OffsetDateTime,
) -> Option<Result<Option<KeyRead>, RepoError>> {
    let SearchAhead {
        tenant_id,
        condition,
        limit,
    } = search;
    let statement = statement(key_hash, *tenant_id, condition, *limit, now)?;
    Some(read(pg, &statement, *tenant_id, *limit).await)
}

async fn read(
    pg: &PgDirect,
    statement: &Statement,
    tenant_id: Uuid,
    limit: u64,
) -> Result<Option<KeyRead>, RepoError> {
    let rows = pg.query_all(statement).await.map_err(repo_err)?;
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let (application, settings) = application_and_settings_of(first)?;
    let mut tokens = Vec::with_capacity(rows.len());
    for row in &rows {
        if let Some(token) = token_of(row)? {
            tokens.push(token);
        }
    }
    // Newest first, as every search answers.
    tokens.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
    let whole = u64::try_from(tokens.len()).is_ok_and(|n| n <= limit);
    let read = application.tenant_id == tenant_id
        && application.app_type == ApplicationType::Private
        && whole;
    Ok(Some(KeyRead {
        matches: if read {
            Beside::Read(tokens)
        } else {
            Beside::NotRead
        },
        ..KeyRead::alone(application, settings)
    }))
}

/// The token of a row, when it holds one.
fn token_of(row: &QueryResult) -> Result<Option<tokenvault_domain::token::StoredToken>, RepoError> {
    let id: Option<String> = row.try_get("", "id").map_err(repo_err)?;
    match id {
        Some(_) => tokenvault_persistence_shared::rows::token::to_domain(
            token::Model::from_query_result(row, "").map_err(repo_err)?,
        )
        .map(Some),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_joined_for_a_private_key_of_the_tenant_only() {
        let condition = SearchCondition::Term("abc".into());
        let statement = statement(
            "00".into(),
            Uuid::nil(),
            &condition,
            100,
            OffsetDateTime::UNIX_EPOCH,
        )
        .expect("visible");
        let sql = statement.sql;
        for needed in [
            "\"tokens\".\"tenant_id\" = a.tenant_id AND a.app_type = 'private'",
            "s.deleted_at IS NULL",
            "LIMIT $",
            "IS TRUE",
            "\"search_terms\" AS jsonb) @>",
        ] {
            assert!(sql.contains(needed), "{needed} in {sql}");
        }
        assert!(!sql.contains("data_key"), "never the tenant's wrapped key");
        let values = statement.values.expect("bound").0;
        assert_eq!(
            values.last(),
            Some(&Value::from("00".to_string())),
            "the key is the last value"
        );
        assert!(sql.ends_with(&format!(
            "a.key_hash = ${} AND s.deleted_at IS NULL",
            values.len()
        )));
    }
}
