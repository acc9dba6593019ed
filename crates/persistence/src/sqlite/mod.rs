//! What runs on SQLite only: point reads on the calling thread (`direct.rs`), the file's
//! writer thread and the jobs it runs (`writer.rs`, `group_commit.rs`, `audit_append.rs`,
//! `token_months.rs`), its checkpoints (`checkpoint.rs`), online backups (`backup.rs`) and the
//! key-and-reactor read (`keyed_reactor.rs`).

pub(crate) mod activity;
pub(crate) mod applications;
pub(crate) mod audit_append;
pub(crate) mod backend;
pub mod backup;
pub(crate) mod checkpoint;
pub(crate) mod direct;
pub(crate) mod group_commit;
pub(crate) mod keyed_reactor;
pub(crate) mod proxies;
pub(crate) mod reactors;
pub(crate) mod tenants;
pub(crate) mod token_months;
pub(crate) mod tokens;
pub(crate) mod tx;
pub(crate) mod writer;
