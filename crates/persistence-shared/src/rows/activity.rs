//! The `token_activity` rows: one per (tenant, UTC month, token) seen active, written in chunks
//! by the activity flush (`sqlite/activity.rs`, `postgres/activity.rs`).

use uuid::Uuid;

use super::write::Put;
use crate::entity::activity;

/// A row's values, in the entity's order.
pub fn put<'a>(
    (tenant_id, month, token_id): &'a (Uuid, String, String),
    row: &mut Put<'_, 'a, activity::Column>,
) {
    row.uuid(activity::Column::TenantId, *tenant_id);
    row.text(activity::Column::Month, month);
    row.text(activity::Column::TokenId, token_id);
}
