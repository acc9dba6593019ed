//! TokenVault's domain: tenants, applications, access rules and the use cases over them, plus the
//! port traits those use cases need. Pure: no I/O crate is a dependency (checked by a test).
//!
//! Adapters (HTTP, persistence, crypto) depend on this crate; it depends on none of them.

pub mod access;
pub mod application;
pub mod area_error;
pub mod audit;
pub mod auth;
pub mod code_fetch;
pub mod container;
pub mod error;
pub mod formula;
pub mod json_size;
pub mod mask;
pub mod page;
pub mod permission;
pub mod ports;
pub mod privacy;
pub mod proxy;
pub mod reactor;
pub mod search_index;
pub mod search_query;
pub mod service;
pub mod session;
pub mod template;
pub mod tenant;
pub mod token;
pub mod token_new;
pub mod token_patch;
pub mod token_type;
pub mod token_view;

pub use area_error::{CodeFailure, DestinationFailure, ProxyError, ReactorError, TokenError};
pub use error::{Error, RepoError, ValidationErrors};
pub use service::Vault;
