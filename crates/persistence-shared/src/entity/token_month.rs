//! The `token_months` table: tokens created per (tenant, UTC month), added as tokens are
//! inserted (migration 16: PostgreSQL's trigger, SQLite's adapter in `sqlite/token_months.rs`), in one
//! row per shard (PostgreSQL: one per writing backend slot).
#![allow(missing_docs)]

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "token_months")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tenant_id: Uuid,
    #[sea_orm(primary_key, auto_increment = false)]
    pub month: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub shard: i16,
    pub created: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
