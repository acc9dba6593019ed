//! The `audit_log` table: one row per entry of a tenant's chain. On SQLite `created_at` is
//! written as fixed-width UTC text (see `audit.rs`) so that text order is time order.
#![allow(missing_docs)]

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "audit_log")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub seq: i64,
    pub actor_type: String,
    pub actor_id: Option<Uuid>,
    pub operation: String,
    pub entity_type: String,
    pub entity_id: String,
    pub trace_id: Option<String>,
    pub created_at: TimeDateTimeWithTimeZone,
    pub hash: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
