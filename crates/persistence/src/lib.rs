//! Persistence adapter: the domain's repository ports on SeaORM, for SQLite (the embedded
//! default, `tokenvault-persistence-sqlite`) and PostgreSQL (`tokenvault-persistence-postgres`),
//! over what both share (`tokenvault-persistence-shared`). This crate opens one or the other
//! by its URL (`connect.rs`), migrates it, and holds the contract suite run against both
//! (`tests/`, `testing.rs`).

mod connect;
#[cfg(feature = "test-support")]
pub mod testing;
#[cfg(feature = "test-support")]
mod token_explain;

pub use connect::{
    analyze_changed_tables, connect, migrate, pending_migrations, refresh_statistics,
};
/// SeaORM's pool, inside every [`Database`].
pub use sea_orm::DatabaseConnection;
#[cfg(feature = "test-support")]
pub use token_explain::{explain_fingerprint_lookup, explain_list_page, explain_search_page};
pub use tokenvault_persistence_postgres::startup_lock::StartupLock;
pub use tokenvault_persistence_shared::Database;
pub use tokenvault_persistence_shared::applications::SeaOrmApplicationRepository;
pub use tokenvault_persistence_shared::audit::SeaOrmAuditRepository;
pub use tokenvault_persistence_shared::idempotency::SeaOrmIdempotencyRepository;
pub use tokenvault_persistence_shared::options::{ConnectError, DbOptions};
pub use tokenvault_persistence_shared::proxies::SeaOrmProxyRepository;
pub use tokenvault_persistence_shared::reactors::{
    SeaOrmFormulaRepository, SeaOrmReactorRepository,
};
pub use tokenvault_persistence_shared::sessions::SeaOrmSessionRepository;
pub use tokenvault_persistence_shared::tenants::SeaOrmTenantRepository;
#[cfg(feature = "test-support")]
pub use tokenvault_persistence_shared::token_count::counted_total;
pub use tokenvault_persistence_shared::tokens::SeaOrmTokenRepository;
pub use tokenvault_persistence_shared::usage::SeaOrmUsageRepository;
/// A SQLite file's online backups.
pub use tokenvault_persistence_sqlite::backup as sqlite_backup;

/// SQLite's parts the server reaches by name.
pub mod sqlite {
    pub use tokenvault_persistence_sqlite::backup;
}
