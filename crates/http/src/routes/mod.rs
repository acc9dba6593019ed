//! Route handlers, one module per resource.

pub mod applications;
pub mod meta;
pub mod tenants;
pub mod tokens;
