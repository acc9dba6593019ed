//! The SQL of token lists: every filter (ids, types, metadata, visible containers, session
//! conditions, parent) as a condition, the children query, and the page in creation order.

use sea_orm::sea_query::{
    Alias, Asterisk, DynIden, Expr, ExprTrait, Func, IntoIden, JoinType, LikeExpr, Order, Query,
    SelectStatement,
};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DatabaseBackend, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect,
};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::access::{ConditionAttribute, ConditionOperator, RuleCondition};
use tokenvault_domain::ports::{TokenFilter, Visibility};
use tokenvault_domain::token::StoredToken;
use uuid::Uuid;

use crate::entity::{association, token};
use crate::repo_error::repo_err;
use crate::rows::token::{live, to_domain};

/// `prefix` with LIKE's wildcards and its escape character escaped.
pub(crate) fn escape_like(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + 1);
    for c in prefix.chars() {
        if matches!(c, '\\' | '%' | '_') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// `metadata.<key> = value`, portable: SQLite's `json_extract`, PostgreSQL's
/// `jsonb_extract_path_text` (keys are bound parameters, never spliced into SQL).
fn metadata_equals(
    backend: DatabaseBackend,
    key: &str,
    value: &str,
) -> sea_orm::sea_query::SimpleExpr {
    if backend == DatabaseBackend::Postgres {
        ExprTrait::eq(
            Expr::expr(
                Func::cust("jsonb_extract_path_text")
                    .arg(Expr::col(token::Column::Metadata).cast_as("jsonb"))
                    .arg(key),
            ),
            value,
        )
    } else {
        let path = format!("$.\"{}\"", key.replace('\\', "\\\\").replace('"', "\\\""));
        ExprTrait::eq(
            Expr::expr(
                Func::cust("json_extract")
                    .arg(Expr::col(token::Column::Metadata))
                    .arg(path),
            ),
            value,
        )
    }
}

/// Every filter of a list as one condition on `tokens` (columns qualified by table name), or
/// `None` when the caller may read no container at all.
pub fn filter_condition(
    backend: DatabaseBackend,
    tenant_id: Uuid,
    filter: &TokenFilter,
    now: OffsetDateTime,
) -> Option<Condition> {
    let mut condition = Condition::all()
        .add(token::Column::TenantId.eq(tenant_id))
        .add(live(now));
    condition = condition.add(visibility_condition(&filter.visibility)?);
    if !filter.ids.is_empty() {
        condition = condition.add(token::Column::Id.is_in(filter.ids.iter().cloned()));
    }
    if !filter.types.is_empty() {
        condition = condition.add(token::Column::TokenType.is_in(filter.types.iter().cloned()));
    }
    for (k, v) in &filter.metadata {
        condition = condition.add(metadata_equals(backend, k, v));
    }
    Some(condition)
}

/// The tokens `visibility` admits, or `None` when it admits none.
pub(crate) fn visibility_condition(visibility: &Visibility) -> Option<Condition> {
    match visibility {
        Visibility::All => Some(Condition::all()),
        Visibility::Prefixes(prefixes) if prefixes.is_empty() => None,
        Visibility::Prefixes(prefixes) => {
            let mut any = Condition::any();
            for p in prefixes {
                any = any.add(
                    Expr::col((token::Entity, token::Column::Container))
                        .like(LikeExpr::new(escape_like(p)).escape('\\')),
                );
            }
            Some(any)
        }
        Visibility::Conditions(clauses) if clauses.is_empty() => None,
        Visibility::Conditions(clauses) => {
            let mut any = Condition::any();
            for clause in clauses {
                let mut all = Condition::all();
                for c in clause {
                    all = all.add(rule_condition(c));
                }
                any = any.add(all);
            }
            Some(any)
        }
        Visibility::Both(a, b) => Some(
            Condition::all()
                .add(visibility_condition(a)?)
                .add(visibility_condition(b)?),
        ),
        Visibility::Either(a, b) => match (visibility_condition(a), visibility_condition(b)) {
            (None, None) => None,
            (Some(c), None) | (None, Some(c)) => Some(c),
            (Some(a), Some(b)) => Some(Condition::any().add(a).add(b)),
        },
    }
}

/// One session-rule condition on `tokens`. `starts_with` compares a prefix with `substr` rather
/// than `LIKE`: SQLite's `LIKE` ignores case, and ids are case-sensitive.
fn rule_condition(c: &RuleCondition) -> sea_orm::sea_query::SimpleExpr {
    let column = match c.attribute {
        ConditionAttribute::Id => token::Column::Id,
        ConditionAttribute::Container => token::Column::Container,
    };
    let column = Expr::col((token::Entity, column));
    match c.operator {
        ConditionOperator::Equals => column.eq(c.value.as_str()),
        ConditionOperator::StartsWith => {
            // `integer` arguments: PostgreSQL has no `substr(text, int, bigint)`.
            let length = i32::try_from(c.value.chars().count()).unwrap_or(i32::MAX);
            Expr::expr(Func::cust("substr").arg(column).arg(1).arg(length)).eq(c.value.as_str())
        }
    }
}

/// The children of `parent` that satisfy `condition`, as a query that starts from the
/// association rows (the primary key `(tenant_id, parent_id, child_id)`) and looks each child
/// up by its primary key: a page of children costs the same however many tokens the tenant
/// holds. Planners would rather walk the tenant's tokens in page order and probe the
/// associations for each, so the order is forced: SQLite keeps the left table of a
/// `CROSS JOIN` outside; PostgreSQL cannot reorder a `LATERAL` subquery kept from being
/// flattened by `OFFSET 0`. Returns the statement without order or limit, and the name to
/// qualify the token columns with.
pub fn children_query(
    backend: DatabaseBackend,
    tenant_id: Uuid,
    parent: &str,
    condition: Condition,
) -> (SelectStatement, DynIden) {
    let parent_matches = Condition::all()
        .add(Expr::col((association::Entity, association::Column::TenantId)).eq(tenant_id))
        .add(Expr::col((association::Entity, association::Column::ParentId)).eq(parent));
    let joins = Condition::all()
        .add(
            Expr::col((token::Entity, token::Column::TenantId))
                .equals((association::Entity, association::Column::TenantId)),
        )
        .add(
            Expr::col((token::Entity, token::Column::Id))
                .equals((association::Entity, association::Column::ChildId)),
        );
    if backend == DatabaseBackend::Postgres {
        let alias: DynIden = Alias::new("t").into_iden();
        let child = Query::select()
            .column((token::Entity, Asterisk))
            .from(token::Entity)
            .cond_where(joins.add(condition))
            .offset(0)
            .to_owned();
        let query = Query::select()
            .column((alias.clone(), Asterisk))
            .from(association::Entity)
            .join_lateral(
                JoinType::InnerJoin,
                child,
                alias.clone(),
                Expr::cust("TRUE"),
            )
            .cond_where(parent_matches)
            .to_owned();
        (query, alias)
    } else {
        let query = Query::select()
            .column((token::Entity, Asterisk))
            .from(association::Entity)
            .cross_join(token::Entity)
            .cond_where(parent_matches.add(joins).add(condition))
            .to_owned();
        (query, token::Entity.into_iden())
    }
}

/// One page of a token list, newest first by `(created_at, id)`. With an `id` filter (at most
/// 100 values) SQLite must find the rows by primary key and sort them, not walk the tenant's
/// tokens in page order looking for them: `+created_at` keeps its planner from using the
/// `(tenant_id, created_at)` index for the order. (PostgreSQL chooses so from statistics.)
pub fn list_page(
    backend: DatabaseBackend,
    query: sea_orm::Select<token::Entity>,
    filter: &TokenFilter,
    limit: u64,
    offset: u64,
) -> sea_orm::Select<token::Entity> {
    let query = if backend == DatabaseBackend::Sqlite && !filter.ids.is_empty() {
        query.order_by(Expr::cust("+\"tokens\".\"created_at\""), Order::Desc)
    } else {
        query.order_by_desc(token::Column::CreatedAt)
    };
    query
        .order_by_desc(token::Column::Id)
        .offset(offset)
        .limit(limit)
}

/// One page of `query`, newest first by `(created_at, id)` of the token columns of `table`.
pub fn newest_first(
    mut query: SelectStatement,
    table: DynIden,
    limit: u64,
    offset: u64,
) -> SelectStatement {
    query
        .order_by((table.clone(), token::Column::CreatedAt), Order::Desc)
        .order_by((table, token::Column::Id), Order::Desc)
        .limit(limit)
        .offset(offset);
    query
}

/// The tenant's token `id` unless it has expired at `now`, through SeaORM.
pub async fn live_token(
    db: &impl ConnectionTrait,
    tenant_id: Uuid,
    id: &str,
    now: OffsetDateTime,
) -> Result<Option<StoredToken>, RepoError> {
    token::Entity::find()
        .filter(token::Column::TenantId.eq(tenant_id))
        .filter(token::Column::Id.eq(id))
        .filter(live(now))
        .one(db)
        .await
        .map_err(repo_err)?
        .map(to_domain)
        .transpose()
}

/// The tenant's live tokens among `ids`, through SeaORM.
pub async fn live_tokens(
    db: &impl ConnectionTrait,
    tenant_id: Uuid,
    ids: &[String],
    now: OffsetDateTime,
) -> Result<Vec<StoredToken>, RepoError> {
    token::Entity::find()
        .filter(token::Column::TenantId.eq(tenant_id))
        .filter(token::Column::Id.is_in(ids.iter().cloned()))
        .filter(live(now))
        .all(db)
        .await
        .map_err(repo_err)?
        .into_iter()
        .map(to_domain)
        .collect()
}

/// The oldest live token of `tenant_id` with this type, container and fingerprint.
pub fn fingerprint_lookup(
    tenant_id: Uuid,
    token_type: &str,
    container: &str,
    fingerprint: &str,
    now: OffsetDateTime,
) -> sea_orm::Select<token::Entity> {
    token::Entity::find()
        .filter(token::Column::TenantId.eq(tenant_id))
        .filter(token::Column::TokenType.eq(token_type))
        .filter(token::Column::Container.eq(container))
        .filter(token::Column::Fingerprint.eq(fingerprint))
        .filter(live(now))
        .order_by_asc(token::Column::CreatedAt)
}
