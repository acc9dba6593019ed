//! One page of a management list (applications, proxies, reactor formulas, reactors): how many
//! rows match, and the page's rows newest first (`created_at`, then the id, so that rows made
//! in the same instant keep one order), each made a domain value.

use sea_orm::{
    ColumnTrait, ConnectionTrait, EntityTrait, FromQueryResult, PaginatorTrait, QueryOrder,
    QuerySelect, Select,
};
use tokenvault_domain::RepoError;
use tokenvault_domain::page::{Page, PageRequest};

use crate::repo_error::repo_err;

/// The page `page` of `query`, newest first by `(created_at, id)`, its rows read by `read`.
pub async fn newest_first<E, T, C>(
    db: &C,
    query: Select<E>,
    (created_at, id): (E::Column, E::Column),
    page: PageRequest,
    read: impl Fn(E::Model) -> Result<T, RepoError>,
) -> Result<Page<T>, RepoError>
where
    E: EntityTrait,
    E::Model: FromQueryResult + Send + Sync,
    E::Column: ColumnTrait,
    C: ConnectionTrait,
{
    let total_items = query.clone().count(db).await.map_err(repo_err)?;
    let items = query
        .order_by_desc(created_at)
        .order_by_desc(id)
        .offset(page.offset())
        .limit(page.size)
        .all(db)
        .await
        .map_err(repo_err)?
        .into_iter()
        .map(read)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page {
        items,
        total_items,
        request: page,
    })
}
