//! The `proxies` table. `key_hash` is the hex SHA-256 of the key, `key_ciphertext` the key
//! under the tenant's data key, `configuration` a JSON object of strings as text.
#![allow(missing_docs)]

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "proxies")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tenant_id: Uuid,
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub name: String,
    pub key_hash: String,
    pub key_ciphertext: Vec<u8>,
    pub destination_url: String,
    pub require_auth: bool,
    pub request_transform: Option<String>,
    pub response_transform: Option<String>,
    pub application_id: Option<Uuid>,
    pub configuration: Option<String>,
    pub created_by: Option<Uuid>,
    pub created_at: TimeDateTimeWithTimeZone,
    pub modified_by: Option<Uuid>,
    pub modified_at: Option<TimeDateTimeWithTimeZone>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
