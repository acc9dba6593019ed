//! The `proxies` rows as the fast paths read them (the conversion to the domain's proxy stays
//! with its repository, `proxies.rs`, beside the sealing of its configuration).

use super::Fields;
use crate::entity::proxy;

/// A `proxies` row read in the entity's column order ([`super::columns`]).
pub(crate) fn from_sqlite(f: &mut Fields<'_, '_>) -> rusqlite::Result<proxy::Model> {
    f.table::<proxy::Column, _>(&[], |f| {
        Ok(proxy::Model {
            tenant_id: f.uuid()?,
            id: f.uuid()?,
            name: f.get()?,
            key_hash: f.get()?,
            key_ciphertext: f.get()?,
            destination_url: f.get()?,
            require_auth: f.get()?,
            request_transform: f.get()?,
            response_transform: f.get()?,
            application_id: f.opt_uuid()?,
            configuration: f.get()?,
            created_by: f.opt_uuid()?,
            created_at: f.time()?,
            modified_by: f.opt_uuid()?,
            modified_at: f.opt_time()?,
        })
    })
}
