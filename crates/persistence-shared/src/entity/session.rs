//! The `sessions` table. `key_hash` and `nonce_hash` are the hex SHA-256 (`nonce_hash` null once
//! used); `permissions` and `rules` are JSON text as for applications.
#![allow(missing_docs)]

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "sessions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub created_by: Uuid,
    pub authorized_by: Option<Uuid>,
    pub key_hash: String,
    pub nonce_hash: Option<String>,
    pub permissions: String,
    pub rules: String,
    pub created_at: TimeDateTimeWithTimeZone,
    pub expires_at: TimeDateTimeWithTimeZone,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::tenant::Entity",
        from = "Column::TenantId",
        to = "super::tenant::Column::Id"
    )]
    Tenant,
    #[sea_orm(
        belongs_to = "super::application::Entity",
        from = "Column::CreatedBy",
        to = "super::application::Column::Id"
    )]
    Creator,
    #[sea_orm(
        belongs_to = "super::application::Entity",
        from = "Column::AuthorizedBy",
        to = "super::application::Column::Id"
    )]
    Authorizer,
}

impl Related<super::tenant::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Tenant.def()
    }
}

/// The application a session is related to is the one that authorized it: its rights are what
/// the session's are checked against.
impl Related<super::application::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Authorizer.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
