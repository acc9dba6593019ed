//! What each database does its own way beside SeaORM's pool: the [`Backend`] a `Database`
//! holds (`sqlite/backend.rs`, `postgres/backend.rs`) and each repository's part of it,
//! implemented once per database (docs/persistence.md, "What each database does its own way").
//! What is the same on both stays in the repository's file.

use std::sync::Arc;

use async_trait::async_trait;
use sea_orm::{DatabaseConnection, DatabaseTransaction, Select};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::application::{Application, KeyHash};
use tokenvault_domain::audit::{AppendOutcome, AuditEntry, AuditHead};
use tokenvault_domain::formula::Formula;
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::ports::{AlsoRead, Beside, KeyRead, StoredProxy, TokenWrite};
use tokenvault_domain::reactor::Reactor;
use tokenvault_domain::tenant::{Tenant, TenantSettings};
use tokenvault_domain::token::StoredToken;
use uuid::Uuid;

use crate::entity::token;
use crate::reads::Reads;

/// What one database does its own way beside SeaORM's pool (`sqlite/backend.rs`,
/// `postgres/backend.rs`): each repository's part of it (docs/persistence.md, "What each
/// database does its own way"), and the threads it stops at close.
#[async_trait]
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// Where the repositories' SeaORM point reads run.
    fn reads(&self, db: &DatabaseConnection) -> Reads;
    /// The application reads.
    fn applications(&self, db: &DatabaseConnection) -> Arc<dyn ApplicationReads>;
    /// The proxy reads.
    fn proxies(&self, db: &DatabaseConnection) -> Arc<dyn ProxyReads>;
    /// The formula and reactor reads.
    fn reactors(&self, db: &DatabaseConnection) -> Arc<dyn ReactorReads>;
    /// The tenant reads.
    fn tenants(&self, db: &DatabaseConnection) -> Arc<dyn TenantReads>;
    /// The token engine.
    fn tokens(&self, db: &DatabaseConnection) -> Arc<dyn TokenEngine>;
    /// The audit log's appending thread.
    fn audit(&self) -> Arc<dyn AuditAppender>;
    /// The activity writes.
    fn activity(&self, db: &DatabaseConnection) -> Arc<dyn ActivityWriter>;
    /// A transaction for a job that spans tenants on purpose (a sweep, a verification): on
    /// Citus one whose statements may span shards (`postgres/citus.rs`), a plain one elsewhere.
    async fn spanning_tenants(
        &self,
        db: &DatabaseConnection,
    ) -> Result<DatabaseTransaction, sea_orm::DbErr> {
        sea_orm::TransactionTrait::begin(db).await
    }

    /// An application, a tenant, a reactor or a formula was changed by this server (or may
    /// have been: the write failed after its commit): a database that keeps what key reads
    /// return in memory (`postgres/key_cache.rs`) forgets it before the change is answered.
    /// Nothing elsewhere.
    fn keys_changed(&self) {}

    /// Stops the threads, each once the work queued before is done, by `until` at the latest.
    async fn stop(&self, until: tokio::time::Instant);
    /// Tests only: on a SQLite file, every read on the calling thread answers as a locked
    /// file does (or again as usual). Nothing elsewhere.
    #[cfg(feature = "test-support")]
    fn refuse_direct_reads(&self, refused: bool) {
        let _ = refused;
    }
}

/// How one database reads applications: by key (every request's authentication), by key with
/// what the request reads next, by id.
#[async_trait]
pub trait ApplicationReads: Send + Sync + std::fmt::Debug {
    /// The application holding `key_hash` (hex) and its tenant's settings; `None` for an
    /// unknown key or a deleted tenant's.
    async fn by_key(
        &self,
        key_hash: String,
    ) -> Result<Option<(Application, TenantSettings)>, RepoError>;

    /// The key and what `also` asks for in one round trip, where this database reads it
    /// ahead; `None` where it does not (the key is then read alone, and the use case reads
    /// what it needs once the caller is checked).
    async fn by_key_also(
        &self,
        key_hash: String,
        also: &AlsoRead,
        now: OffsetDateTime,
    ) -> Option<Result<Option<KeyRead>, RepoError>>;

    /// The application `id` of `tenant_id`.
    async fn by_id(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Application>, RepoError>;
}

/// How one database reads proxies: by id, by key, by key with the tokens a call names.
#[async_trait]
pub trait ProxyReads: Send + Sync + std::fmt::Debug {
    /// The proxy `id` of `tenant_id`.
    async fn by_id(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<StoredProxy>, RepoError>;

    /// The proxy holding `key_hash` (hex), if its tenant is live.
    async fn by_key(&self, key_hash: String) -> Result<Option<StoredProxy>, RepoError>;

    /// `ProxyRepository::find_by_key_hash_also`, where this database reads the tokens
    /// ahead; `None` where it does not (the proxy is then read alone).
    async fn by_key_also(
        &self,
        hash: &KeyHash,
        caller_key: Option<&KeyHash>,
        token_ids: &[String],
        now: OffsetDateTime,
    ) -> Option<Result<Option<(StoredProxy, Beside<Vec<StoredToken>>)>, RepoError>>;
}

/// How one database reads a formula and a reactor by id (`sqlite/reactors.rs`,
/// `postgres/reactors.rs`).
#[async_trait]
pub trait ReactorReads: Send + Sync + std::fmt::Debug {
    /// The formula `id` of `tenant_id`.
    async fn formula(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Formula>, RepoError>;
    /// The reactor `id` of `tenant_id`.
    async fn reactor(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Reactor>, RepoError>;
}

/// How one database reads a live tenant by id (`sqlite/tenants.rs`, `postgres/tenants.rs`).
#[async_trait]
pub trait TenantReads: Send + Sync + std::fmt::Debug {
    /// The live tenant `id`, without its wrapped data key.
    async fn by_id(&self, id: Uuid) -> Result<Option<Tenant>, RepoError>;
}

/// What one database does its own way with tokens (`sqlite/tokens.rs`,
/// `postgres/tokens.rs`): the single insert (each database's writer thread, which commits
/// concurrent inserts together), a batch's statements, the point reads, a search page found
/// through terms, the expiry sweep.
#[async_trait]
pub trait TokenEngine: Send + Sync + std::fmt::Debug {
    /// Stores one new token.
    async fn insert(&self, t: &StoredToken) -> Result<TokenWrite, RepoError>;

    /// How many rows one insert statement of `TokenRepository::insert_all` carries.
    fn rows_per_statement(&self) -> usize;

    /// Counts a batch's tokens per tenant and month in its transaction, where no trigger of
    /// the database does (`token_months`).
    async fn count_created(
        &self,
        txn: &DatabaseTransaction,
        tokens: &[StoredToken],
    ) -> Result<(), RepoError>;

    /// The live token `id` of `tenant_id`.
    async fn get(
        &self,
        tenant_id: Uuid,
        id: &str,
        now: OffsetDateTime,
    ) -> Result<Option<StoredToken>, RepoError>;

    /// The live tokens among `ids` of `tenant_id`.
    async fn get_many(
        &self,
        tenant_id: Uuid,
        ids: &[String],
        now: OffsetDateTime,
    ) -> Result<Vec<StoredToken>, RepoError>;

    /// A search page whose matches are found through a term, where this database reads it its
    /// own way; `None` where it does not (the repository reads it through SeaORM).
    fn term_page(
        &self,
        query: &Select<token::Entity>,
        page: PageRequest,
    ) -> Option<Result<Page<StoredToken>, RepoError>>;

    /// Whether the tokens are distributed by tenant over nodes (Citus).
    fn distributed(&self) -> bool;

    /// Deletes every token expired at `now` and the counter rows left empty; how many.
    async fn delete_expired(&self, now: OffsetDateTime) -> Result<u64, RepoError>;
}

/// The thread of one database that appends to the log: a SQLite file's writer
/// (`sqlite/audit_append.rs`), PostgreSQL's appender (`postgres/audit_copy.rs`).
#[async_trait]
pub trait AuditAppender: Send + Sync + std::fmt::Debug {
    /// Appends `entries` (checked to follow `expected`) to the tenant's chain if its head is
    /// still `expected`.
    async fn append(
        &self,
        tenant_id: Uuid,
        expected: Option<&AuditHead>,
        entries: &[AuditEntry],
    ) -> Result<AppendOutcome, RepoError>;

    /// Waits until every append queued before this call has run: an append whose caller left
    /// still runs (or is skipped), and a read of the head or the chain must see its outcome,
    /// or the next flush would append the same entries again (the domain settles such appends
    /// by reading the chain).
    async fn settled(&self) -> Result<(), RepoError>;
}

/// How one database writes a chunk of activity rows (`sqlite/activity.rs`,
/// `postgres/activity.rs`).
#[async_trait]
pub trait ActivityWriter: Send + Sync + std::fmt::Debug {
    /// Writes `entries` (tenant, month, token id), skipping rows already there and rows of a
    /// tenant deleted meanwhile.
    async fn insert(&self, entries: &[(Uuid, String, String)]) -> Result<(), RepoError>;
}
