//! Token repository contract: the same stories on SQLite and PostgreSQL, fresh database each.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

#[path = "../common/mod.rs"]
mod common;
mod lifecycle;
mod reads;
mod tenant_keys;
mod usage;
