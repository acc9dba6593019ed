//! The `reactor_formulas` table. `configuration` and `request_parameters` are JSON text;
//! `status` is `verified`, `failed` or NULL (not checked yet).
#![allow(missing_docs)]

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "reactor_formulas")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tenant_id: Uuid,
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub formula_type: String,
    pub code: String,
    pub configuration: String,
    pub request_parameters: String,
    pub created_by: Option<Uuid>,
    pub created_at: TimeDateTimeWithTimeZone,
    pub modified_by: Option<Uuid>,
    pub modified_at: Option<TimeDateTimeWithTimeZone>,
    pub status: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
