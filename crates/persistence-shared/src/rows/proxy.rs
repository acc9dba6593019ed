//! The `proxies` rows as the fast paths read them (the conversion to the domain's proxy stays
//! with its repository, `proxies.rs`, beside the sealing of its configuration).

use super::Fields;
use crate::entity::proxy;

/// A `proxies` row read in the entity's column order ([`super::columns`]).
pub fn from_sqlite(f: &mut Fields<'_, '_>) -> rusqlite::Result<proxy::Model> {
    f.table::<proxy::Column, _>(&[], |f| {
        Ok(proxy::Model {
            tenant_id: f.uuid(proxy::Column::TenantId)?,
            id: f.uuid(proxy::Column::Id)?,
            name: f.get(proxy::Column::Name)?,
            key_hash: f.get(proxy::Column::KeyHash)?,
            key_ciphertext: f.get(proxy::Column::KeyCiphertext)?,
            destination_url: f.get(proxy::Column::DestinationUrl)?,
            require_auth: f.get(proxy::Column::RequireAuth)?,
            request_transform: f.get(proxy::Column::RequestTransform)?,
            response_transform: f.get(proxy::Column::ResponseTransform)?,
            application_id: f.opt_uuid(proxy::Column::ApplicationId)?,
            configuration: f.get(proxy::Column::Configuration)?,
            created_by: f.opt_uuid(proxy::Column::CreatedBy)?,
            created_at: f.time(proxy::Column::CreatedAt)?,
            modified_by: f.opt_uuid(proxy::Column::ModifiedBy)?,
            modified_at: f.opt_time(proxy::Column::ModifiedAt)?,
        })
    })
}
