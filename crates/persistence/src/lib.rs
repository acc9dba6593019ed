//! Persistence adapter: the domain's repository ports on SeaORM, for SQLite (the embedded
//! default) and PostgreSQL. SQL errors are translated to `RepoError` in one place (`repo_error.rs`).

mod applications;
mod audit;
mod audit_rows;
mod backend;
mod connect;
mod engine;
mod entity;
mod grants;
mod idempotency;
mod keyed_reactor;
mod one_of_tenant;
mod paging;
mod postgres;
mod proxies;
mod reactors;
mod reads;
mod repo_error;
mod rows;
mod search;
mod sessions;
pub mod sqlite;
mod stamp;
mod tenant_purge;
mod tenants;
#[cfg(feature = "test-support")]
pub mod testing;
mod threads;
mod token_count;
#[cfg(feature = "test-support")]
mod token_explain;
mod token_queries;
mod token_search;
mod tokens;
mod usage;

pub use applications::SeaOrmApplicationRepository;
pub use audit::SeaOrmAuditRepository;
pub use connect::{
    ConnectError, DbOptions, analyze_changed_tables, connect, migrate, pending_migrations,
    refresh_statistics,
};
pub use engine::Database;
pub use idempotency::SeaOrmIdempotencyRepository;
pub use postgres::startup_lock::StartupLock;
pub use proxies::SeaOrmProxyRepository;
pub use reactors::{SeaOrmFormulaRepository, SeaOrmReactorRepository};
/// SeaORM's pool, inside every [`Database`].
pub use sea_orm::DatabaseConnection;
pub use sessions::SeaOrmSessionRepository;
pub use tenants::SeaOrmTenantRepository;
#[cfg(feature = "test-support")]
pub use token_count::counted_total;
#[cfg(feature = "test-support")]
pub use token_explain::{explain_fingerprint_lookup, explain_list_page, explain_search_page};
pub use tokens::SeaOrmTokenRepository;
pub use usage::SeaOrmUsageRepository;
