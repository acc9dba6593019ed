//! The persistence adapter on PostgreSQL (`tokenvault-persistence-shared` holds what both
//! databases share): the adapter's own connections (`direct.rs`), the token
//! group writer (`group.rs`) and audit appender (`audit_copy.rs`) on threads of their own
//! (`supervise.rs`), the key reads that join what a request reads next (`keyed_read.rs`,
//! `key_group.rs`, `keyed_reactor.rs`, `keyed_search.rs`), the keys kept in memory and the
//! listener that hears their changes (`key_cache.rs`), Citus (`citus.rs`) and the startup
//! lock (`startup_lock.rs`).

mod activity;
mod appender;
mod applications;
mod audit_copy;
mod backend;
pub mod citus;
mod direct;
mod group;
mod key_cache;
mod key_group;
mod key_listener;
mod keyed_reactor;
mod keyed_read;
mod keyed_search;
pub mod open;
mod proxies;
mod reactors;
pub mod startup_lock;
mod supervise;
mod tenants;
mod tokens;
