//! [`TokenRepository`] on SeaORM: tokens (ciphertext), associations and monthly activity.
//! Every filter of a list (ids, types, metadata, visible containers, parent) runs in SQL.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::sea_query::{
    Alias, Asterisk, DynIden, Expr, ExprTrait, Func, IntoIden, JoinType, LikeExpr, OnConflict,
    Order, Query, SelectStatement,
};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DatabaseBackend, DatabaseConnection,
    DbErr, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, SqlErr,
    TransactionTrait,
};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::access::{ConditionAttribute, ConditionOperator, RuleCondition};
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::ports::{TokenFilter, TokenRepository, TokenWrite, TypeCount, Visibility};
use tokenvault_domain::token::StoredToken;
use uuid::Uuid;

use crate::direct::DirectReads;
use crate::entity::{activity, association, token};
use crate::group_commit::GroupCommit;
use crate::repo_err;
use crate::stamp::{stamp, unstamp};

/// Tokens in the `tokens` table.
#[derive(Clone, Debug)]
pub struct SeaOrmTokenRepository {
    db: DatabaseConnection,
    /// SQLite's point reads on the calling thread (`direct.rs`); `None` on PostgreSQL.
    direct: Option<Arc<DirectReads>>,
    /// SQLite's single-token inserts, committed in groups.
    writer: Arc<GroupCommit>,
}

impl SeaOrmTokenRepository {
    /// A repository over `db` (migrated).
    pub fn new(db: DatabaseConnection) -> Self {
        Self {
            direct: DirectReads::for_connection(&db),
            db,
            writer: Arc::default(),
        }
    }
}

/// A unique violation, told apart by the index it hit; other errors are backend failures.
fn write_conflict(err: DbErr) -> Result<TokenWrite, RepoError> {
    match err.sql_err() {
        Some(SqlErr::UniqueConstraintViolation(what)) if what.contains("dedup") => {
            Ok(TokenWrite::DuplicateFingerprint)
        }
        Some(SqlErr::UniqueConstraintViolation(_)) => Ok(TokenWrite::DuplicateId),
        Some(SqlErr::ForeignKeyConstraintViolation(_)) => Ok(TokenWrite::Missing),
        _ => Err(repo_err(err)),
    }
}

fn metadata_json(t: &StoredToken) -> String {
    serde_json::to_string(&t.metadata).unwrap_or_else(|_| "{}".into())
}

fn to_active(t: &StoredToken) -> token::ActiveModel {
    token::ActiveModel {
        tenant_id: Set(t.tenant_id),
        id: Set(t.id.clone()),
        token_type: Set(t.token_type.clone()),
        container: Set(t.container.clone()),
        metadata: Set(metadata_json(t)),
        data: Set(t.data.clone()),
        mask: Set(t.mask.clone()),
        fingerprint: Set(t.fingerprint.clone()),
        dedup_key: Set(t.dedup_key.clone()),
        fingerprint_expression: Set(t.fingerprint_expression.clone()),
        created_by: Set(t.created_by),
        created_at: Set(stamp(t.created_at)),
        modified_by: Set(t.modified_by),
        modified_at: Set(t.modified_at.map(stamp)),
        expires_at: Set(t.expires_at.map(stamp)),
    }
}

pub(crate) fn to_domain(m: token::Model) -> Result<StoredToken, RepoError> {
    let metadata: BTreeMap<String, String> = serde_json::from_str(&m.metadata)
        .map_err(|_| RepoError::Backend("stored token metadata is unreadable".into()))?;
    Ok(StoredToken {
        id: m.id,
        tenant_id: m.tenant_id,
        token_type: m.token_type,
        container: m.container,
        metadata,
        data: m.data,
        mask: m.mask,
        fingerprint: m.fingerprint,
        dedup_key: m.dedup_key,
        fingerprint_expression: m.fingerprint_expression,
        created_by: m.created_by,
        created_at: unstamp(m.created_at),
        modified_by: m.modified_by,
        modified_at: m.modified_at.map(unstamp),
        expires_at: m.expires_at.map(unstamp),
    })
}

/// The tenant's token `id` unless it has expired at `now`, through SeaORM.
pub(crate) async fn live_token(
    db: &DatabaseConnection,
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

fn live(now: OffsetDateTime) -> Condition {
    Condition::any()
        .add(token::Column::ExpiresAt.is_null())
        .add(token::Column::ExpiresAt.gt(stamp(now)))
}

fn escape_like(prefix: &str) -> String {
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
fn filter_condition(
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
fn visibility_condition(visibility: &Visibility) -> Option<Condition> {
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
pub(crate) fn children_query(
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
fn list_page(
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
fn newest_first(
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

impl SeaOrmTokenRepository {
    async fn list_children(
        &self,
        tenant_id: Uuid,
        parent: &str,
        condition: Condition,
        page: PageRequest,
    ) -> Result<Page<StoredToken>, RepoError> {
        let backend = self.db.get_database_backend();
        let (query, table) = children_query(backend, tenant_id, parent, condition);
        let count = Query::select()
            .expr_as(Expr::cust("COUNT(*)"), Alias::new("n"))
            .from_subquery(query.clone(), Alias::new("children"))
            .to_owned();
        let total: i64 = self
            .db
            .query_one_raw(backend.build(&count))
            .await
            .map_err(repo_err)?
            .map(|row| row.try_get("", "n"))
            .transpose()
            .map_err(repo_err)?
            .unwrap_or(0);
        let items = newest_first(query, table, page.size, page.offset());
        let items = token::Entity::find()
            .from_raw_sql(backend.build(&items))
            .all(&self.db)
            .await
            .map_err(repo_err)?
            .into_iter()
            .map(to_domain)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Page {
            items,
            total_items: u64::try_from(total).unwrap_or(0),
            request: page,
        })
    }
}

#[async_trait]
impl TokenRepository for SeaOrmTokenRepository {
    async fn insert(&self, t: &StoredToken) -> Result<TokenWrite, RepoError> {
        if self.db.get_database_backend() == DatabaseBackend::Sqlite {
            return self
                .writer
                .insert(&self.db, self.direct.as_ref(), to_active(t), write_conflict)
                .await;
        }
        match token::Entity::insert(to_active(t))
            .exec_without_returning(&self.db)
            .await
        {
            Ok(_) => Ok(TokenWrite::Done),
            Err(e) => write_conflict(e),
        }
    }

    async fn insert_all(&self, tokens: &[StoredToken]) -> Result<TokenWrite, RepoError> {
        if tokens.is_empty() {
            return Ok(TokenWrite::Done);
        }
        let txn = self.db.begin().await.map_err(repo_err)?;
        for chunk in tokens.chunks(100) {
            let result = token::Entity::insert_many(chunk.iter().map(to_active))
                .exec_without_returning(&txn)
                .await;
            if let Err(e) = result {
                let outcome = write_conflict(e);
                txn.rollback().await.map_err(repo_err)?;
                return outcome;
            }
        }
        txn.commit().await.map_err(repo_err)?;
        Ok(TokenWrite::Done)
    }

    async fn get(
        &self,
        tenant_id: Uuid,
        id: &str,
        now: OffsetDateTime,
    ) -> Result<Option<StoredToken>, RepoError> {
        if let Some(found) = self
            .direct
            .as_ref()
            .and_then(|d| d.live_token(tenant_id, id, now))
        {
            return found;
        }
        live_token(&self.db, tenant_id, id, now).await
    }

    async fn get_many(
        &self,
        tenant_id: Uuid,
        ids: &[String],
        now: OffsetDateTime,
    ) -> Result<Vec<StoredToken>, RepoError> {
        token::Entity::find()
            .filter(token::Column::TenantId.eq(tenant_id))
            .filter(token::Column::Id.is_in(ids.iter().cloned()))
            .filter(live(now))
            .all(&self.db)
            .await
            .map_err(repo_err)?
            .into_iter()
            .map(to_domain)
            .collect()
    }

    async fn find_by_fingerprint(
        &self,
        tenant_id: Uuid,
        token_type: &str,
        container: &str,
        fingerprint: &str,
        now: OffsetDateTime,
    ) -> Result<Option<StoredToken>, RepoError> {
        token::Entity::find()
            .filter(token::Column::TenantId.eq(tenant_id))
            .filter(token::Column::TokenType.eq(token_type))
            .filter(token::Column::Container.eq(container))
            .filter(token::Column::Fingerprint.eq(fingerprint))
            .filter(live(now))
            .order_by_asc(token::Column::CreatedAt)
            .one(&self.db)
            .await
            .map_err(repo_err)?
            .map(to_domain)
            .transpose()
    }

    async fn update(&self, t: &StoredToken) -> Result<TokenWrite, RepoError> {
        let result = token::Entity::update_many()
            .col_expr(token::Column::Container, Expr::value(t.container.clone()))
            .col_expr(token::Column::Metadata, Expr::value(metadata_json(t)))
            .col_expr(token::Column::Data, Expr::value(t.data.clone()))
            .col_expr(token::Column::Mask, Expr::value(t.mask.clone()))
            .col_expr(
                token::Column::Fingerprint,
                Expr::value(t.fingerprint.clone()),
            )
            .col_expr(token::Column::DedupKey, Expr::value(t.dedup_key.clone()))
            .col_expr(
                token::Column::FingerprintExpression,
                Expr::value(t.fingerprint_expression.clone()),
            )
            .col_expr(token::Column::ModifiedBy, Expr::value(t.modified_by))
            .col_expr(
                token::Column::ModifiedAt,
                Expr::value(t.modified_at.map(stamp)),
            )
            .col_expr(
                token::Column::ExpiresAt,
                Expr::value(t.expires_at.map(stamp)),
            )
            .filter(token::Column::TenantId.eq(t.tenant_id))
            .filter(token::Column::Id.eq(t.id.clone()))
            .exec(&self.db)
            .await;
        match result {
            Ok(r) if r.rows_affected > 0 => Ok(TokenWrite::Done),
            Ok(_) => Ok(TokenWrite::Missing),
            Err(e) => write_conflict(e),
        }
    }

    async fn delete(&self, tenant_id: Uuid, id: &str) -> Result<bool, RepoError> {
        let result = token::Entity::delete_many()
            .filter(token::Column::TenantId.eq(tenant_id))
            .filter(token::Column::Id.eq(id))
            .exec(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(result.rows_affected > 0)
    }

    async fn list(
        &self,
        tenant_id: Uuid,
        filter: &TokenFilter,
        page: PageRequest,
        now: OffsetDateTime,
    ) -> Result<Page<StoredToken>, RepoError> {
        let backend = self.db.get_database_backend();
        let Some(condition) = filter_condition(backend, tenant_id, filter, now) else {
            return Ok(Page {
                items: Vec::new(),
                total_items: 0,
                request: page,
            });
        };
        if let Some(parent) = &filter.parent {
            return self.list_children(tenant_id, parent, condition, page).await;
        }
        let query = token::Entity::find().filter(condition);
        let total_items = query.clone().count(&self.db).await.map_err(repo_err)?;
        let items = list_page(backend, query, filter, page.size, page.offset())
            .all(&self.db)
            .await
            .map_err(repo_err)?
            .into_iter()
            .map(to_domain)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Page {
            items,
            total_items,
            request: page,
        })
    }

    async fn delete_expired(&self, now: OffsetDateTime) -> Result<u64, RepoError> {
        let result = token::Entity::delete_many()
            .filter(token::Column::ExpiresAt.lte(stamp(now)))
            .exec(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(result.rows_affected)
    }

    async fn count_by_type(
        &self,
        tenant_id: Uuid,
        now: OffsetDateTime,
    ) -> Result<Vec<TypeCount>, RepoError> {
        let rows: Vec<(String, i64, Option<OffsetDateTime>)> = token::Entity::find()
            .select_only()
            .column(token::Column::TokenType)
            .column_as(token::Column::Id.count(), "count")
            .column_as(token::Column::CreatedAt.max(), "last_created_at")
            .filter(token::Column::TenantId.eq(tenant_id))
            .filter(live(now))
            .group_by(token::Column::TokenType)
            .into_tuple()
            .all(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(rows
            .into_iter()
            .map(|(token_type, count, last_created_at)| TypeCount {
                token_type,
                count: u64::try_from(count).unwrap_or(0),
                last_created_at: last_created_at.map(unstamp),
            })
            .collect())
    }

    async fn associate(
        &self,
        tenant_id: Uuid,
        parent: &str,
        child: &str,
    ) -> Result<TokenWrite, RepoError> {
        let row = association::ActiveModel {
            tenant_id: Set(tenant_id),
            parent_id: Set(parent.to_string()),
            child_id: Set(child.to_string()),
        };
        match association::Entity::insert(row)
            .exec_without_returning(&self.db)
            .await
        {
            Ok(_) => Ok(TokenWrite::Done),
            Err(e) => write_conflict(e),
        }
    }

    async fn dissociate(
        &self,
        tenant_id: Uuid,
        parent: &str,
        child: &str,
    ) -> Result<bool, RepoError> {
        let result = association::Entity::delete_many()
            .filter(association::Column::TenantId.eq(tenant_id))
            .filter(association::Column::ParentId.eq(parent))
            .filter(association::Column::ChildId.eq(child))
            .exec(&self.db)
            .await
            .map_err(repo_err)?;
        Ok(result.rows_affected > 0)
    }

    async fn record_activity(&self, entries: &[(Uuid, String, String)]) -> Result<(), RepoError> {
        for chunk in entries.chunks(200) {
            let rows = chunk
                .iter()
                .map(|(tenant_id, month, token_id)| activity::ActiveModel {
                    tenant_id: Set(*tenant_id),
                    month: Set(month.clone()),
                    token_id: Set(token_id.clone()),
                });
            let result = activity::Entity::insert_many(rows)
                .on_conflict(
                    OnConflict::columns([
                        activity::Column::TenantId,
                        activity::Column::Month,
                        activity::Column::TokenId,
                    ])
                    .do_nothing()
                    .to_owned(),
                )
                .exec_without_returning(&self.db)
                .await;
            match result {
                Ok(_) | Err(DbErr::RecordNotInserted) => {}
                // A tenant deleted meanwhile: its activity goes with it.
                Err(e) if matches!(e.sql_err(), Some(SqlErr::ForeignKeyConstraintViolation(_))) => {
                }
                Err(e) => return Err(repo_err(e)),
            }
        }
        Ok(())
    }

    async fn count_active(&self, tenant_id: Uuid, month: &str) -> Result<u64, RepoError> {
        activity::Entity::find()
            .filter(activity::Column::TenantId.eq(tenant_id))
            .filter(activity::Column::Month.eq(month))
            .count(&self.db)
            .await
            .map_err(repo_err)
    }
}

/// The plan the database chooses for the first page of a token list with `filter` (its
/// `parent` selects the children query), one line per plan step: SQLite's `EXPLAIN QUERY PLAN`
/// details, PostgreSQL's `EXPLAIN` lines (after `ANALYZE`, with sequential scans disabled, so
/// that small test tables show the plan large ones get). For tests that assert plans.
#[cfg(feature = "test-support")]
pub async fn explain_list_page(
    db: &DatabaseConnection,
    tenant_id: Uuid,
    filter: &TokenFilter,
    now: OffsetDateTime,
) -> Result<Vec<String>, DbErr> {
    use sea_orm::{QueryTrait as _, Statement};
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
    let built = backend.build(&page);
    if backend == DatabaseBackend::Postgres {
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
