//! What the audit appenders (`audit_append.rs` on SQLite's writer, `audit_copy.rs` on
//! PostgreSQL's) share beyond the rows' codec (`rows/audit_entry.rs`): the lock an append
//! takes first, the index a lost race hits. Below both: it imports neither.

/// Taken first by an append on PostgreSQL: a tenant's delete locks its row and then, through
/// its cascade, the head, so an append that moved the head first and then waited on the tenant
/// row for its entries' foreign key deadlocked with it. `NOWAIT`: only a delete (or a key
/// change, which nothing makes) locks a tenant's row against it, and every tenant's appends
/// queue behind this one, so a tenant whose row is locked fails at once; its entries wait in
/// memory for the next flush, which drops them if the tenant is gone by then.
pub(crate) const LOCK_TENANT: &str = "SELECT 1 FROM tenants WHERE id = $1 FOR KEY SHARE NOWAIT";

/// The name of the unique (tenant, seq) index, as PostgreSQL reports a violation of it.
pub(crate) const SEQ_INDEX: &str = "idx_audit_log_tenant_seq";
