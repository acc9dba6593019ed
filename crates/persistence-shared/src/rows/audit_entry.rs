//! The `audit_log` rows: an entry's values as its appenders write them (`sqlite/audit_append.rs` on
//! SQLite, `postgres/audit_copy.rs` on PostgreSQL), and `created_at` as it is stored: UTC, whole
//! microseconds; on SQLite text with exactly six fraction digits, so that text order is time
//! order.

use time::{OffsetDateTime, UtcOffset};
use tokenvault_domain::audit::AuditEntry;

use super::write::{Put, WriteError};
use crate::entity::audit_entry;

/// An entry's values, in the entity's order: the one list of them both appenders write.
pub fn put<'a>(entry: &'a AuditEntry, row: &mut Put<'_, 'a, audit_entry::Column>) {
    use audit_entry::Column as C;
    let e = &entry.event;
    row.uuid(C::Id, e.id);
    row.uuid(C::TenantId, e.tenant_id);
    row.int(C::Seq, entry.seq);
    row.text(C::ActorType, &e.actor_type);
    row.opt_uuid(C::ActorId, e.actor_id);
    row.text(C::Operation, &e.operation);
    row.text(C::EntityType, &e.entity_type);
    row.text(C::EntityId, &e.entity_id);
    row.opt_text(C::TraceId, e.trace_id.as_deref());
    row.time(C::CreatedAt, micros(e.created_at));
    row.text(C::Hash, &entry.hash);
}

/// `t` in UTC, whole microseconds.
pub fn micros(t: OffsetDateTime) -> OffsetDateTime {
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

/// `sqlite_time` as the SQLite sink takes it.
#[allow(clippy::unnecessary_wraps)]
pub fn sqlite_text(t: OffsetDateTime) -> Result<String, WriteError> {
    Ok(sqlite_time(t))
}
