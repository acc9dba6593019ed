//! Route handlers, one module per resource.

pub mod applications;
pub mod logs;
pub mod meta;
pub mod permissions;
pub mod proxies;
pub mod reactors;
pub mod sessions;
pub mod tenants;
pub mod token_search;
pub mod tokens;
