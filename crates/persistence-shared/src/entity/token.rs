//! The `tokens` table: ciphertext in `data`/`mask`, metadata as JSON text, search index
//! expressions and blind index terms as JSON arrays (NULL: none).
#![allow(missing_docs)]

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tokens")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tenant_id: Uuid,
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub token_type: String,
    pub container: String,
    #[sea_orm(column_type = "Text")]
    pub metadata: String,
    pub data: Vec<u8>,
    pub mask: Option<Vec<u8>>,
    pub fingerprint: Option<String>,
    pub dedup_key: Option<String>,
    #[sea_orm(column_type = "Text", nullable)]
    pub fingerprint_expression: Option<String>,
    pub created_by: Option<Uuid>,
    pub created_at: TimeDateTimeWithTimeZone,
    pub modified_by: Option<Uuid>,
    pub modified_at: Option<TimeDateTimeWithTimeZone>,
    pub expires_at: Option<TimeDateTimeWithTimeZone>,
    pub deduplicate: Option<bool>,
    #[sea_orm(column_type = "Text", nullable)]
    pub search_indexes: Option<String>,
    #[sea_orm(column_type = "Text", nullable)]
    pub search_terms: Option<String>,
    pub version: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
