//! What runs on PostgreSQL only: the adapter's own connections (`direct.rs`), the token
//! group writer (`group.rs`) and audit appender (`audit_copy.rs`) on threads of their own
//! (`supervise.rs`), the key reads that join what a request reads next (`keyed_read.rs`,
//! `key_group.rs`, `keyed_reactor.rs`, `keyed_search.rs`), Citus (`citus.rs`) and the startup
//! lock (`startup_lock.rs`).

pub(crate) mod activity;
pub(crate) mod appender;
pub(crate) mod applications;
pub(crate) mod audit_copy;
pub(crate) mod backend;
pub(crate) mod citus;
pub(crate) mod direct;
pub(crate) mod group;
pub(crate) mod key_group;
pub(crate) mod keyed_reactor;
pub(crate) mod keyed_read;
pub(crate) mod keyed_search;
pub(crate) mod proxies;
pub(crate) mod reactors;
pub(crate) mod startup_lock;
pub(crate) mod supervise;
pub(crate) mod tenants;
pub(crate) mod tokens;
