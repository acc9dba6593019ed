//! The TokenVault schema as sea-orm-migration migrations, one schema for SQLite and PostgreSQL.
//! Applied on every server start and by `cargo xtask migrate`.

pub use sea_orm_migration::prelude::*;

pub mod citus;

mod m20261122_000001_tenants_and_applications;
mod m20261123_000002_tokens;
mod m20261124_000003_dedup_per_container;
mod m20261124_000004_reactors;
mod m20261125_000005_proxies;
mod m20261126_000006_idempotency;
mod m20261127_000007_sessions;
mod m20261128_000008_audit_log;
mod m20261129_000009_sqlite_fixed_width_times;
mod m20261130_000010_tokens_count_index;
mod m20261201_000011_partial_token_indexes;
mod m20261202_000012_token_counts;
mod m20261203_000013_token_version_and_dedup_choice;
mod m20261204_000014_tenant_keys;
mod m20261205_000015_tenant_tombstones;
mod m20261206_000016_token_months;
mod m20261207_000017_formula_status;
mod m20261208_000018_search_indexes;
mod m20261209_000019_key_change_notices;

/// Every migration in order.
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261122_000001_tenants_and_applications::Migration),
            Box::new(m20261123_000002_tokens::Migration),
            Box::new(m20261124_000003_dedup_per_container::Migration),
            Box::new(m20261124_000004_reactors::Migration),
            Box::new(m20261125_000005_proxies::Migration),
            Box::new(m20261126_000006_idempotency::Migration),
            Box::new(m20261127_000007_sessions::Migration),
            Box::new(m20261128_000008_audit_log::Migration),
            Box::new(m20261129_000009_sqlite_fixed_width_times::Migration),
            Box::new(m20261130_000010_tokens_count_index::Migration),
            Box::new(m20261201_000011_partial_token_indexes::Migration),
            Box::new(m20261202_000012_token_counts::Migration),
            Box::new(m20261203_000013_token_version_and_dedup_choice::Migration),
            Box::new(m20261204_000014_tenant_keys::Migration),
            Box::new(m20261205_000015_tenant_tombstones::Migration),
            Box::new(m20261206_000016_token_months::Migration),
            Box::new(m20261207_000017_formula_status::Migration),
            Box::new(m20261208_000018_search_indexes::Migration),
            Box::new(m20261209_000019_key_change_notices::Migration),
        ]
    }
}
