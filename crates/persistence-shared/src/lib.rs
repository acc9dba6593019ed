//! What the persistence adapter's two databases share: the domain's repository ports on
//! SeaORM (`SeaOrm*Repository`: the writes, lists and point reads that are the same on both),
//! the entities and row codecs, and the seam each database implements ([`backend::Backend`]
//! and each repository's part of it, docs/persistence.md). SQL errors are translated to
//! `RepoError` in one place (`repo_error.rs`). The databases are `tokenvault-persistence-sqlite`
//! and `tokenvault-persistence-postgres`; `tokenvault-persistence` opens one or the other.

pub mod applications;
pub mod audit;
pub mod audit_rows;
pub mod backend;
pub(crate) mod engine;
pub mod entity;
pub(crate) mod grants;
pub mod idempotency;
pub mod keyed_reactor;
pub(crate) mod one_of_tenant;
pub mod options;
pub(crate) mod paging;
pub mod proxies;
pub mod reactors;
pub mod reads;
pub mod repo_error;
pub mod rows;
pub(crate) mod search;
pub mod sessions;
pub mod stamp;
pub(crate) mod tenant_purge;
pub mod tenants;
pub mod threads;
pub mod token_count;
pub mod token_queries;
pub mod token_search;
pub mod tokens;
pub mod usage;

pub use engine::Database;
