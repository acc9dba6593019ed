//! What the audit appenders (`sqlite/audit_append.rs` on SQLite's writer, `postgres/audit_copy.rs` on
//! PostgreSQL's) share beyond the rows' codec (`rows/audit_entry.rs`): the lock an append
//! takes first, the index a lost race hits, the statements that move a tenant's head. Below
//! both: it imports neither.

use crate::entity::audit_head;
use crate::rows::columns;

/// Taken first by an append on PostgreSQL: a tenant's delete locks its row and then, through
/// its cascade, the head, so an append that moved the head first and then waited on the tenant
/// row for its entries' foreign key deadlocked with it. `NOWAIT`: only a delete (or a key
/// change, which nothing makes) locks a tenant's row against it, and every tenant's appends
/// queue behind this one, so a tenant whose row is locked fails at once; its entries wait in
/// memory for the next flush, which drops them if the tenant is gone by then.
pub const LOCK_TENANT: &str = "SELECT 1 FROM tenants WHERE id = $1 FOR KEY SHARE NOWAIT";

/// The name of the unique (tenant, seq) index, as PostgreSQL reports a violation of it.
pub const SEQ_INDEX: &str = "idx_audit_log_tenant_seq";

/// A tenant's first head, its columns the entity's (`tenant_id`, `seq`, `hash`), bound in that
/// order; no row when another appender wrote it first. `mark(n)` is the driver's `n`th
/// parameter (`?n` on SQLite, `$n` on PostgreSQL).
pub fn first_head(mark: fn(usize) -> String) -> String {
    format!(
        "INSERT INTO audit_heads ({}) VALUES ({}, {}, {}) ON CONFLICT (tenant_id) DO NOTHING",
        columns::<audit_head::Column>(None, &[]),
        mark(1),
        mark(2),
        mark(3)
    )
}

/// Moves a tenant's head to (seq, hash) = (1, 2) from the one it was, (4, 5), the tenant
/// bound third; no row when another appender moved it first.
pub fn move_head(mark: fn(usize) -> String) -> String {
    format!(
        "UPDATE audit_heads SET seq = {}, hash = {} WHERE tenant_id = {} AND seq = {} AND hash = {}",
        mark(1),
        mark(2),
        mark(3),
        mark(4),
        mark(5)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The appenders bind a first head as (tenant, seq, hash) and a move as (seq, hash, tenant,
    /// old seq, old hash): the statements must keep that order whatever the entity's.
    #[test]
    fn the_head_statements_take_their_values_in_the_appenders_order() {
        let first = first_head(|n| format!("${n}"));
        assert!(
            first.contains("(tenant_id, seq, hash) VALUES ($1, $2, $3)"),
            "{first}"
        );
        let moved = move_head(|n| format!("?{n}"));
        assert!(
            moved.contains(
                "SET seq = ?1, hash = ?2 WHERE tenant_id = ?3 AND seq = ?4 AND hash = ?5"
            ),
            "{moved}"
        );
    }
}
