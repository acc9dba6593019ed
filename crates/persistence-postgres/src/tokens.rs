//! PostgreSQL's token engine (`tokens.rs`): single inserts through the group writer thread
//! (`group.rs`), a batch in one statement, point reads on the adapter's own connections
//! (`reads.rs`), and on Citus an expiry sweep that fans out on purpose.

use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::{
    ColumnTrait, DatabaseConnection, DatabaseTransaction, EntityTrait, Iterable, QueryFilter,
    Select,
};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::ports::TokenWrite;
use tokenvault_domain::token::StoredToken;
use uuid::Uuid;

use crate::direct::PgDirect;
use tokenvault_persistence_shared::backend::TokenEngine;
use tokenvault_persistence_shared::entity::token;
use tokenvault_persistence_shared::reads::Reads;
use tokenvault_persistence_shared::repo_error::repo_err;
use tokenvault_persistence_shared::rows::token::NewLists;
use tokenvault_persistence_shared::stamp::stamp;
use tokenvault_persistence_shared::token_count::{drop_empty, empty_row_tenants};
use tokenvault_persistence_shared::token_queries::{live_token, live_tokens};

/// A PostgreSQL database's token engine.
#[derive(Debug)]
pub(crate) struct PgTokens {
    pg: Arc<PgDirect>,
    reads: Reads,
    db: DatabaseConnection,
}

impl PgTokens {
    /// The engine of the database whose own connections and threads are `pg`.
    pub(crate) fn new(pg: Arc<PgDirect>, reads: Reads, db: DatabaseConnection) -> Self {
        Self { pg, reads, db }
    }
}

#[async_trait]
impl TokenEngine for PgTokens {
    async fn insert(&self, t: &StoredToken) -> Result<TokenWrite, RepoError> {
        self.pg.writer().insert(t.clone(), NewLists::of(t)).await
    }

    /// The whole batch (`POST /tokenize` sends at most 1,000; the bound is the protocol's
    /// 65,535 parameters: 3,449 rows of 19 columns, over three times the largest batch). The
    /// count triggers take a statement's counter rows in key order, so two single-statement
    /// batches never wait on each other's rows in opposite orders; a batch split over
    /// statements in one transaction held the first statement's counters while waiting for
    /// the next's, and two batches over the same containers in opposite orders deadlocked
    /// (`concurrent_batches_over_the_same_containers_never_deadlock`).
    fn rows_per_statement(&self) -> usize {
        usize::from(u16::MAX) / token::Column::iter().count()
    }

    /// The statement trigger `tokens_month_created` counts them.
    async fn count_created(
        &self,
        _: &DatabaseTransaction,
        _: &[StoredToken],
    ) -> Result<(), RepoError> {
        Ok(())
    }

    async fn get(
        &self,
        tenant_id: Uuid,
        id: &str,
        now: OffsetDateTime,
    ) -> Result<Option<StoredToken>, RepoError> {
        live_token(&self.reads, tenant_id, id, now).await
    }

    async fn get_many(
        &self,
        tenant_id: Uuid,
        ids: &[String],
        now: OffsetDateTime,
    ) -> Result<Vec<StoredToken>, RepoError> {
        live_tokens(&self.reads, tenant_id, ids, now).await
    }

    fn term_page(
        &self,
        _: &Select<token::Entity>,
        _: PageRequest,
    ) -> Option<Result<Page<StoredToken>, RepoError>> {
        None
    }

    fn distributed(&self) -> bool {
        self.reads.distributed()
    }

    async fn delete_expired(&self, now: OffsetDateTime) -> Result<u64, RepoError> {
        if !self.reads.distributed() {
            return tokenvault_persistence_shared::tokens::delete_expired(&self.db, now).await;
        }
        let expired = token::Entity::delete_many().filter(token::Column::ExpiresAt.lte(stamp(now)));
        // The sweep spans tenants on purpose: on Citus one `DELETE` over every shard, then a
        // read of which tenants have empty counter rows, each in a short transaction that
        // allows statements over many shards (`citus::fanning_out`), whatever the connection
        // refuses; then each tenant's empty rows on their own, as on one PostgreSQL (one long
        // transaction held the counter rows that inserts add to until the last tenant).
        let txn = crate::citus::fanning_out(&self.db, true)
            .await
            .map_err(repo_err)?;
        let result = expired.exec(&txn).await.map_err(repo_err)?;
        txn.commit().await.map_err(repo_err)?;
        let txn = crate::citus::fanning_out(&self.db, true)
            .await
            .map_err(repo_err)?;
        let tenants = empty_row_tenants(&txn).await?;
        txn.commit().await.map_err(repo_err)?;
        for tenant in tenants {
            drop_empty(&self.db, Some(tenant)).await?;
        }
        Ok(result.rows_affected)
    }
}
