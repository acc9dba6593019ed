//! SeaORM entities: the wire format of the database. They never leave this crate.

pub mod application;
pub mod tenant;
