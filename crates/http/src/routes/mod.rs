//! Route handlers, one module per resource.

pub mod applications;
pub mod meta;
pub mod reactors;
pub mod tenants;
pub mod tokens;
