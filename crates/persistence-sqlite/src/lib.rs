//! The persistence adapter on SQLite (`tokenvault-persistence-shared` holds what both databases
//! share): point reads on the calling thread (`direct.rs`), the file's
//! writer thread and the jobs it runs (`writer.rs`, `group_commit.rs`, `audit_append.rs`,
//! `token_months.rs`), its checkpoints (`checkpoint.rs`), online backups (`backup.rs`) and the
//! key-and-reactor read (`keyed_reactor.rs`).

mod activity;
mod applications;
mod audit_append;
mod backend;
pub mod backup;
mod checkpoint;
mod direct;
mod group_commit;
mod keyed_reactor;
pub mod open;
mod proxies;
mod reactors;
mod tenants;
mod token_months;
mod tokens;
mod tx;
mod writer;
