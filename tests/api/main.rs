//! Black-box HTTP tests against the real server, each on a fresh database, on SQLite and (with
//! `TOKENVAULT_TEST_DATABASE_URL`) PostgreSQL. One binary, as zero2prod does it.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod applications;
mod architecture;
mod architecture_doc;
mod attacks;
mod audit;
mod auth;
mod backup;
mod client_surface;
mod code_modules;
mod config_at_rest;
mod console;
mod detokenize_bounds;
mod errors;
mod idempotency;
mod isolation;
mod node_runtime;
mod operating;
mod proxies;
mod proxy_audit;
mod reactor_limits;
mod reactors;
mod readiness;
mod render_budget;
mod search;
mod sessions;
mod tenant_delete;
mod tenants;
mod tls;
mod tokens;
mod tokens_review;
mod transforms;
mod transit;
