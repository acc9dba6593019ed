//! The SQL of `POST /tokens/search` (docs/decisions.md §12): a [`SearchCondition`] as one
//! condition on `tokens`, beside the tenant, liveness and the caller's visibility, so that the
//! total and the page count only tokens the caller may search.
//!
//! A blind index term is looked up in an index on either database, however many tokens the
//! tenant holds (migration 18): on SQLite through `token_search_terms` (tenant, term, token),
//! on PostgreSQL through the GIN index on `search_terms::jsonb`. Every term is two-valued (a
//! column that may be NULL is tested for presence first), so `NOT` is the complement of what it
//! negates.

use std::ops::Bound;

use sea_orm::sea_query::{Alias, BinOper, Condition, Expr, ExprTrait, LikeExpr, Query};
use sea_orm::{ColumnTrait, DatabaseBackend, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use time::OffsetDateTime;
use tokenvault_domain::page::PageRequest;
use tokenvault_domain::ports::{SearchCondition, Visibility};
use tokenvault_domain::search_query::TimeRange;
use uuid::Uuid;

use crate::entity::token;
use crate::rows::token::live;
use crate::stamp::stamp;
use crate::token_queries::{escape_like, visibility_condition};

/// SQLite's table of terms (migration 18).
const TERMS_TABLE: &str = "token_search_terms";

/// The tenant's live tokens that `visibility` admits and `condition` (`None`: any) matches, or
/// `None` when the caller may search no container.
///
/// `distributed`: a Citus database, where the tenant is always `tenant_id = $1`, the test that
/// lets Citus route the statement to the tenant's node alone (its shard is one tenant group's
/// share of the table, and a statement it cannot route fans out to every node).
pub fn search_query(
    backend: DatabaseBackend,
    distributed: bool,
    tenant_id: Uuid,
    condition: Option<&SearchCondition>,
    visibility: &Visibility,
    now: OffsetDateTime,
) -> Option<sea_orm::Select<token::Entity>> {
    // PostgreSQL, matches found through a term: the tenant is tested on the rows the term index
    // found, never looked up in an index of its own. A generic plan takes `tenant_id = $1` for
    // selective and combines an index of the tenant's every token with the term's (5 ms against
    // 0.1 ms for one match in a tenant of 200,000 tokens; attack review of e57d89c). Not when
    // the condition names an id: the only index holding ids is the primary key, which leads
    // with the tenant, and without `tenant_id = $1` an `id:` search read every tenant's keys
    // (attack review of 940c02f).
    let tenant = if backend == DatabaseBackend::Postgres
        && !distributed
        && condition.is_some_and(|c| c.found_through_terms() && !names_an_id(c))
    {
        Expr::cust_with_values("(\"tokens\".\"tenant_id\" = $1) IS TRUE", [tenant_id])
    } else {
        Expr::col((token::Entity, token::Column::TenantId)).eq(tenant_id)
    };
    let mut all = Condition::all()
        .add(tenant)
        .add(live(now))
        .add(visibility_condition(visibility)?);
    if let Some(c) = condition {
        all = all.add(search_condition(backend, tenant_id, c));
    }
    Some(token::Entity::find().filter(all))
}

/// Whether `condition` looks a token up by its id anywhere.
fn names_an_id(condition: &SearchCondition) -> bool {
    match condition {
        SearchCondition::Id(_) => true,
        SearchCondition::All(items) | SearchCondition::Any(items) => items.iter().any(names_an_id),
        SearchCondition::Not(item) => names_an_id(item),
        _ => false,
    }
}

/// The total a page tells by itself: a page that is not full is the last, so the matches are
/// those before it and on it (a first page that is empty: none). `None` when only a count
/// can tell (a full page, or an empty page past the first).
pub fn total_from_page(page: PageRequest, rows: usize) -> Option<u64> {
    let rows = u64::try_from(rows).ok()?;
    (rows < page.size && (rows > 0 || page.offset() == 0)).then(|| page.offset() + rows)
}

/// One page of a search, newest first by `(created_at, id)`. When the matches are found
/// through a term ([`SearchCondition::found_through_terms`]) the order is written so that no index gives it (`+created_at` on SQLite, `created_at + '0 s'` on
/// PostgreSQL): a planner would otherwise walk the tenant's tokens newest first, testing each
/// against a term until it has a page, every token of the tenant for a value few hold. Kept
/// from that, it finds the matches through the term index and sorts those.
pub fn search_page(
    backend: DatabaseBackend,
    query: sea_orm::Select<token::Entity>,
    by_term: bool,
    limit: u64,
    offset: u64,
) -> sea_orm::Select<token::Entity> {
    let query = match (by_term, backend) {
        (false, _) => query.order_by_desc(token::Column::CreatedAt),
        (true, DatabaseBackend::Postgres) => query.order_by(
            Expr::cust("\"tokens\".\"created_at\" + interval '0 seconds'"),
            sea_orm::Order::Desc,
        ),
        (true, _) => query.order_by(
            Expr::cust("+\"tokens\".\"created_at\""),
            sea_orm::Order::Desc,
        ),
    };
    query
        .order_by_desc(token::Column::Id)
        .offset(offset)
        .limit(limit)
}

/// `condition` on the tenant's `tokens` rows (columns qualified by table name).
pub(crate) fn search_condition(
    backend: DatabaseBackend,
    tenant_id: Uuid,
    condition: &SearchCondition,
) -> Condition {
    let each = |items: &[SearchCondition], mut out: Condition| {
        for item in items {
            out = out.add(search_condition(backend, tenant_id, item));
        }
        out
    };
    let one = |expr: Expr| Condition::all().add(expr);
    match condition {
        SearchCondition::All(items) => each(items, Condition::all()),
        SearchCondition::Any(items) => each(items, Condition::any()),
        SearchCondition::Not(inner) => search_condition(backend, tenant_id, inner).not(),
        SearchCondition::Id(id) => one(token::Column::Id.eq(id.as_str())),
        SearchCondition::Type(t) => one(token::Column::TokenType.eq(t.as_str())),
        SearchCondition::Term(term) => term_condition(backend, tenant_id, term),
        SearchCondition::Fingerprint(fp) => Condition::all()
            .add(token::Column::Fingerprint.is_not_null())
            .add(token::Column::Fingerprint.eq(fp.as_str())),
        SearchCondition::Container(c) => one(token::Column::Container.eq(c.as_str())),
        SearchCondition::ContainerUnder(c) => {
            one(Expr::col((token::Entity, token::Column::Container))
                .like(LikeExpr::new(escape_like(c)).escape('\\')))
        }
        SearchCondition::CreatedBy(id) => Condition::all()
            .add(token::Column::CreatedBy.is_not_null())
            .add(token::Column::CreatedBy.eq(*id)),
        SearchCondition::ModifiedBy(id) => Condition::all()
            .add(token::Column::ModifiedBy.is_not_null())
            .add(token::Column::ModifiedBy.eq(*id)),
        SearchCondition::CreatedAt(range) => within(token::Column::CreatedAt, range),
        SearchCondition::ModifiedAt(range) => within(token::Column::ModifiedAt, range),
    }
}

/// The rows holding `term` among their blind index terms.
fn term_condition(backend: DatabaseBackend, tenant_id: Uuid, term: &str) -> Condition {
    if backend == DatabaseBackend::Postgres {
        // `["<term>"]` as JSON: the term is base58, but it is encoded, never spliced.
        let wanted = serde_json::to_string(&[term]).unwrap_or_else(|_| "[]".into());
        Condition::all()
            .add(token::Column::SearchTerms.is_not_null())
            .add(
                Expr::col((token::Entity, token::Column::SearchTerms))
                    .cast_as("jsonb")
                    .binary(BinOper::Custom("@>"), Expr::val(wanted).cast_as("jsonb")),
            )
    } else {
        let holders = Query::select()
            .column(Alias::new("token_id"))
            .from(Alias::new(TERMS_TABLE))
            .and_where(Expr::col((Alias::new(TERMS_TABLE), Alias::new("tenant_id"))).eq(tenant_id))
            .and_where(Expr::col((Alias::new(TERMS_TABLE), Alias::new("term"))).eq(term))
            .to_owned();
        Condition::all().add(Expr::col((token::Entity, token::Column::Id)).in_subquery(holders))
    }
}

/// `column` (a time that may be NULL) within `range`; a NULL time is never within.
fn within(column: token::Column, range: &TimeRange) -> Condition {
    let mut all = Condition::all().add(column.is_not_null());
    all = match range.from {
        Bound::Included(t) => all.add(column.gte(stamp(t))),
        Bound::Excluded(t) => all.add(column.gt(stamp(t))),
        Bound::Unbounded => all,
    };
    match range.to {
        Bound::Included(t) => all.add(column.lte(stamp(t))),
        Bound::Excluded(t) => all.add(column.lt(stamp(t))),
        Bound::Unbounded => all,
    }
}

/// Whether `at` is within `range` (the same test in Rust, for the contract tests).
#[cfg(test)]
fn contains(range: &TimeRange, at: OffsetDateTime) -> bool {
    (match range.from {
        Bound::Included(t) => at >= t,
        Bound::Excluded(t) => at > t,
        Bound::Unbounded => true,
    }) && (match range.to {
        Bound::Included(t) => at <= t,
        Bound::Excluded(t) => at < t,
        Bound::Unbounded => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_orm::sea_query::{PostgresQueryBuilder, SqliteQueryBuilder};

    fn sql(backend: DatabaseBackend, c: &SearchCondition) -> String {
        let query = Query::select()
            .column(token::Column::Id)
            .from(token::Entity)
            .cond_where(search_condition(backend, Uuid::nil(), c))
            .to_owned();
        match backend {
            DatabaseBackend::Postgres => query.to_string(PostgresQueryBuilder),
            _ => query.to_string(SqliteQueryBuilder),
        }
    }

    #[test]
    fn a_term_is_looked_up_in_each_databases_index() {
        let term = SearchCondition::Term("abc".into());
        let pg = sql(DatabaseBackend::Postgres, &term);
        assert!(
            pg.contains("CAST(\"tokens\".\"search_terms\" AS jsonb) @>"),
            "{pg}"
        );
        let lite = sql(DatabaseBackend::Sqlite, &term);
        assert!(
            lite.contains("IN (SELECT \"token_id\" FROM \"token_search_terms\""),
            "{lite}"
        );
    }

    #[test]
    fn a_term_driven_search_never_looks_the_tenant_up_in_an_index_on_postgres() {
        use sea_orm::QueryTrait as _;
        let term = SearchCondition::Term("abc".into());
        let text = |backend, c: Option<&SearchCondition>| {
            let q = search_query(
                backend,
                false,
                Uuid::nil(),
                c,
                &Visibility::All,
                OffsetDateTime::UNIX_EPOCH,
            )
            .expect("visible")
            .into_query();
            match backend {
                DatabaseBackend::Postgres => q.to_string(PostgresQueryBuilder),
                _ => q.to_string(SqliteQueryBuilder),
            }
        };
        let pg = text(DatabaseBackend::Postgres, Some(&term));
        assert!(pg.contains("IS TRUE"), "{pg}");
        // The statement as bound on PostgreSQL, on one database or on Citus (`distributed`).
        let bound = |distributed| {
            search_query(
                DatabaseBackend::Postgres,
                distributed,
                Uuid::nil(),
                Some(&term),
                &Visibility::All,
                OffsetDateTime::UNIX_EPOCH,
            )
            .expect("visible")
            .into_query()
            .build(PostgresQueryBuilder)
            .0
        };
        let built = bound(false);
        assert!(built.contains("\"tenant_id\" = $1) IS TRUE"), "{built}");
        let typed = SearchCondition::Type("card".into());
        let by_type = text(DatabaseBackend::Postgres, Some(&typed));
        assert!(!by_type.contains("IS TRUE"), "{by_type}");
        let lite = text(DatabaseBackend::Sqlite, Some(&term));
        assert!(!lite.contains("IS TRUE"), "{lite}");
        // On Citus the tenant is a plain equality, which routes the statement to its node.
        let citus = bound(true);
        assert!(!citus.contains("IS TRUE"), "{citus}");
        assert!(citus.contains("\"tokens\".\"tenant_id\" = $1"), "{citus}");
    }

    #[test]
    fn not_negates_a_two_valued_condition() {
        let c = SearchCondition::Not(Box::new(SearchCondition::ModifiedBy(Uuid::nil())));
        let text = sql(DatabaseBackend::Sqlite, &c);
        assert!(text.contains("NOT"), "{text}");
        assert!(text.contains("IS NOT NULL"), "{text}");
    }

    #[test]
    fn a_page_that_is_not_full_tells_the_total() {
        let page = |page, size| PageRequest { page, size };
        assert_eq!(total_from_page(page(1, 20), 3), Some(3));
        assert_eq!(total_from_page(page(1, 20), 0), Some(0));
        assert_eq!(total_from_page(page(3, 20), 5), Some(45));
        assert_eq!(total_from_page(page(1, 20), 20), None, "a full page: count");
        assert_eq!(total_from_page(page(4, 20), 0), None, "past the end: count");
    }

    #[test]
    fn a_range_bound_is_inclusive_or_exclusive() {
        let t = OffsetDateTime::UNIX_EPOCH;
        let r = TimeRange {
            from: Bound::Included(t),
            to: Bound::Excluded(t + time::Duration::days(1)),
        };
        assert!(contains(&r, t));
        assert!(!contains(&r, t + time::Duration::days(1)));
        let text = sql(DatabaseBackend::Sqlite, &SearchCondition::CreatedAt(r));
        assert!(text.contains(">=") && text.contains(" < "), "{text}");
    }
}
