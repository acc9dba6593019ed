//! The `tenants` table.
#![allow(missing_docs)]

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tenants")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub owner_id: Uuid,
    pub name: String,
    pub fingerprint_tokens: bool,
    pub deduplicate_tokens: bool,
    pub created_by: Option<Uuid>,
    pub created_at: TimeDateTimeWithTimeZone,
    pub modified_by: Option<Uuid>,
    pub modified_at: Option<TimeDateTimeWithTimeZone>,
    pub data_key: Option<Vec<u8>>,
    /// Set when the tenant was deleted: a tombstone whose rows are being purged.
    pub deleted_at: Option<TimeDateTimeWithTimeZone>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
