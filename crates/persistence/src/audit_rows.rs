//! What the audit repository and its two appenders (`audit_append.rs` on SQLite's writer,
//! `audit_copy.rs` on PostgreSQL's) share about the `audit_log` rows: how times are written,
//! the lock an append takes first, the index a lost race hits. Below all three: it imports
//! none of them.

use time::{OffsetDateTime, UtcOffset};

/// Taken first by an append on PostgreSQL: a tenant's delete locks its row and then, through
/// its cascade, the head, so an append that moved the head first and then waited on the tenant
/// row for its entries' foreign key deadlocked with it. `NOWAIT`: only a delete (or a key
/// change, which nothing makes) locks a tenant's row against it, and every tenant's appends
/// queue behind this one, so a tenant whose row is locked fails at once; its entries wait in
/// memory for the next flush, which drops them if the tenant is gone by then.
pub(crate) const LOCK_TENANT: &str = "SELECT 1 FROM tenants WHERE id = $1 FOR KEY SHARE NOWAIT";

/// The name of the unique (tenant, seq) index, as PostgreSQL reports a violation of it.
pub(crate) const SEQ_INDEX: &str = "idx_audit_log_tenant_seq";

/// `t` in UTC, whole microseconds.
pub(crate) fn micros(t: OffsetDateTime) -> OffsetDateTime {
    let t = t.to_offset(UtcOffset::UTC);
    t - time::Duration::nanoseconds(i64::from(t.nanosecond() % 1_000))
}

/// `t` as SQLite keeps `created_at`: UTC text with exactly six fraction digits.
pub(crate) fn sqlite_time(t: OffsetDateTime) -> String {
    let t = micros(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond()
    )
}
