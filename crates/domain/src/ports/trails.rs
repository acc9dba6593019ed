//! The write-behind of the audit log and of monthly activity: use cases hand over what they
//! did and go on; what was handed over is written later, in batches, by the audit and usage
//! areas (`service/audit/buffer.rs`, `service/activity.rs`), which implement these ports.

use uuid::Uuid;

use crate::audit::AuditEvent;

/// Where use cases leave their audit events.
pub trait AuditTrail: Send + Sync {
    /// Keeps `events` (all of `tenant_id`, in the order they happened) for the next write.
    fn record(&self, tenant_id: Uuid, events: Vec<AuditEvent>);
}

/// Where use cases leave the tokens they used, for the monthly active count.
pub trait ActivityTrail: Send + Sync {
    /// Notes that tokens `ids` of `tenant_id` were used in `month` (`YYYY-MM`, UTC).
    fn record(&self, tenant_id: Uuid, month: &str, ids: &mut dyn Iterator<Item = &str>);
}
