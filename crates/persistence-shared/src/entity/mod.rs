//! SeaORM entities: the wire format of the database. They never leave this crate.

pub mod activity;
pub mod application;
pub mod association;
pub mod audit_entry;
pub mod audit_head;
pub mod formula;
pub mod idempotency;
pub mod proxy;
pub mod reactor;
pub mod session;
pub mod tenant;
pub mod token;
pub mod token_month;
