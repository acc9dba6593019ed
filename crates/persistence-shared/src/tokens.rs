//! [`TokenRepository`] on SeaORM: tokens (ciphertext), associations and monthly activity.
//! Every filter of a list (ids, types, metadata, visible containers, parent) runs in SQL.

use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::sea_query::{Alias, Expr, ExprTrait, Query};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, EntityTrait,
    PaginatorTrait, QueryFilter, TransactionTrait,
};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::ports::{
    SearchCondition, TokenFilter, TokenRepository, TokenWrite, Visibility,
};
use tokenvault_domain::token::StoredToken;
use uuid::Uuid;

use crate::backend::TokenEngine;
use crate::engine::Database;
use crate::entity::{association, token};
use crate::reads::Reads;
use crate::repo_error::repo_err;
use crate::rows::token::{
    insert_order, list_json, metadata_json, to_active, to_domain, write_conflict,
};
use crate::stamp::stamp;
use crate::token_count::{counted_total, drop_empty};
use crate::token_queries::{
    children_query, filter_condition, fingerprint_lookup, list_page, newest_first,
};
use crate::token_search::{search_page, search_query, total_from_page};

/// Deletes every token expired at `now` on `db` in one statement, then the counter rows left
/// empty: the sweep of a database that is not distributed.
pub async fn delete_expired(
    db: &DatabaseConnection,
    now: OffsetDateTime,
) -> Result<u64, RepoError> {
    let result = token::Entity::delete_many()
        .filter(token::Column::ExpiresAt.lte(stamp(now)))
        .exec(db)
        .await
        .map_err(repo_err)?;
    drop_empty(db, None).await?;
    Ok(result.rows_affected)
}

/// Tokens in the `tokens` table.
#[derive(Clone, Debug)]
pub struct SeaOrmTokenRepository {
    db: DatabaseConnection,
    /// What the database does its own way.
    engine: Arc<dyn TokenEngine>,
    /// Point reads (`reads.rs`). Lists, pages and counts stay on the pool.
    reads: Reads,
}

impl SeaOrmTokenRepository {
    /// A repository over `db` (migrated).
    pub fn new(db: Database) -> Self {
        let engine = db.backend().tokens(db.connection());
        Self {
            engine,
            reads: db.reads(),
            db: db.connection().clone(),
        }
    }
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
        self.engine.insert(t).await
    }

    async fn insert_all(&self, tokens: &[StoredToken]) -> Result<TokenWrite, RepoError> {
        if tokens.is_empty() {
            return Ok(TokenWrite::Done);
        }
        let mut ordered: Vec<&StoredToken> = tokens.iter().collect();
        ordered.sort_unstable_by(|a, b| insert_order(a, b));
        let txn = self.db.begin().await.map_err(repo_err)?;
        for chunk in ordered.chunks(self.engine.rows_per_statement()) {
            let result = token::Entity::insert_many(chunk.iter().map(|t| to_active(t)))
                .exec_without_returning(&txn)
                .await;
            if let Err(e) = result {
                let outcome = write_conflict(e);
                txn.rollback().await.map_err(repo_err)?;
                return outcome;
            }
        }
        self.engine.count_created(&txn, tokens).await?;
        txn.commit().await.map_err(repo_err)?;
        Ok(TokenWrite::Done)
    }

    async fn get(
        &self,
        tenant_id: Uuid,
        id: &str,
        now: OffsetDateTime,
    ) -> Result<Option<StoredToken>, RepoError> {
        self.engine.get(tenant_id, id, now).await
    }

    async fn get_many(
        &self,
        tenant_id: Uuid,
        ids: &[String],
        now: OffsetDateTime,
    ) -> Result<Vec<StoredToken>, RepoError> {
        self.engine.get_many(tenant_id, ids, now).await
    }

    async fn find_by_fingerprint(
        &self,
        tenant_id: Uuid,
        token_type: &str,
        container: &str,
        fingerprint: &str,
        expression: Option<String>,
        now: OffsetDateTime,
    ) -> Result<Option<StoredToken>, RepoError> {
        fingerprint_lookup(tenant_id, token_type, container, fingerprint, now)
            .filter(match expression {
                Some(e) => token::Column::FingerprintExpression.eq(e),
                None => token::Column::FingerprintExpression.is_null(),
            })
            .one(&self.reads)
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
            .col_expr(token::Column::Deduplicate, Expr::value(t.deduplicate))
            .col_expr(
                token::Column::SearchIndexes,
                Expr::value(list_json(&t.search_indexes)),
            )
            .col_expr(
                token::Column::SearchTerms,
                Expr::value(list_json(&t.search_terms)),
            )
            // Written only over the version that was read: a PATCH that lost a race with
            // another write changes nothing and learns it (`Missing`).
            .col_expr(
                token::Column::Version,
                Expr::col(token::Column::Version).add(1),
            )
            .filter(token::Column::TenantId.eq(t.tenant_id))
            .filter(token::Column::Id.eq(t.id.clone()))
            .filter(token::Column::Version.eq(t.version))
            .exec(&self.db)
            .await;
        match result {
            Ok(r) if r.rows_affected > 0 => Ok(TokenWrite::Done),
            Ok(_) => Ok(TokenWrite::Missing),
            Err(e) => write_conflict(e),
        }
    }

    async fn delete_expired_holders(
        &self,
        tenant_id: Uuid,
        keys: &[(String, String)],
        now: OffsetDateTime,
    ) -> Result<u64, RepoError> {
        let mut deleted = 0;
        // Two parameters a key: well under SQLite's bound-parameter limit per statement.
        for chunk in keys.chunks(200) {
            let held = chunk
                .iter()
                .fold(Condition::any(), |any, (container, key)| {
                    any.add(
                        Condition::all()
                            .add(token::Column::Container.eq(container.as_str()))
                            .add(token::Column::DedupKey.eq(key.as_str())),
                    )
                });
            let result = token::Entity::delete_many()
                .filter(token::Column::TenantId.eq(tenant_id))
                .filter(token::Column::ExpiresAt.lte(stamp(now)))
                .filter(held)
                .exec(&self.db)
                .await
                .map_err(repo_err)?;
            deleted += result.rows_affected;
        }
        if deleted > 0 {
            drop_empty(&self.db, Some(tenant_id)).await?;
        }
        Ok(deleted)
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
        let total_items = match counted_total(&self.db, tenant_id, filter, now).await? {
            Some(n) => n,
            None => query.clone().count(&self.db).await.map_err(repo_err)?,
        };
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

    async fn search(
        &self,
        tenant_id: Uuid,
        condition: Option<SearchCondition>,
        visibility: &Visibility,
        page: PageRequest,
        now: OffsetDateTime,
    ) -> Result<Page<StoredToken>, RepoError> {
        let backend = self.db.get_database_backend();
        let distributed = self.engine.distributed();
        let Some(query) = search_query(
            backend,
            distributed,
            tenant_id,
            condition.as_ref(),
            visibility,
            now,
        ) else {
            return Ok(Page {
                items: Vec::new(),
                total_items: 0,
                request: page,
            });
        };
        let by_term = condition
            .as_ref()
            .is_some_and(SearchCondition::found_through_terms);
        if by_term && let Some(found) = self.engine.term_page(&query, page) {
            return found;
        }
        // Every token the caller may search: the total the database keeps, as for a list.
        let kept = match condition {
            None => {
                let every = TokenFilter {
                    ids: Vec::new(),
                    types: Vec::new(),
                    metadata: Vec::new(),
                    visibility: visibility.clone(),
                    parent: None,
                };
                counted_total(&self.db, tenant_id, &every, now).await?
            }
            Some(_) => None,
        };
        let rows = search_page(backend, query.clone(), by_term, page.size, page.offset());
        // On the pool, never on the point-read connections every key read needs (`reads.rs`):
        // a term many tokens hold makes a page that sorts all of them, and a count that reads
        // them all (attack review of 940c02f). A search the key read ahead is answered above;
        // one here pays the pool's per-call planning, the price of a path that may be large.
        let items = rows
            .all(&self.db)
            .await
            .map_err(repo_err)?
            .into_iter()
            .map(to_domain)
            .collect::<Result<Vec<_>, _>>()?;
        let total_items = match kept.or_else(|| total_from_page(page, items.len())) {
            Some(n) => n,
            None => query.count(&self.db).await.map_err(repo_err)?,
        };
        Ok(Page {
            items,
            total_items,
            request: page,
        })
    }

    async fn delete_expired(&self, now: OffsetDateTime) -> Result<u64, RepoError> {
        self.engine.delete_expired(now).await
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
}
