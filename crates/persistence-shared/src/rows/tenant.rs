//! The `tenants` rows: the domain's [`Tenant`] (the wrapped data key is read on its own).

use sea_orm::{DbErr, Iden, QueryResult};
use tokenvault_domain::tenant::{Tenant, TenantSettings};

use super::Fields;
use crate::entity::tenant;
use crate::stamp::unstamp;

/// A stored row made a tenant (its wrapped data key is not part of it).
pub fn to_domain(model: tenant::Model) -> Tenant {
    Tenant {
        id: model.id,
        owner_id: model.owner_id,
        name: model.name,
        settings: TenantSettings {
            fingerprint_tokens: model.fingerprint_tokens,
            deduplicate_tokens: model.deduplicate_tokens,
        },
        created_by: model.created_by,
        created_at: unstamp(model.created_at),
        modified_by: model.modified_by,
        modified_at: model.modified_at.map(unstamp),
    }
}

/// The columns a fast path never reads: the wrapped data key (read only by `data_key`) and the
/// tombstone (a fast path reads live tenants only).
pub const UNREAD: &[tenant::Column] = &[tenant::Column::DataKey, tenant::Column::DeletedAt];

/// A `tenants` row read in the entity's column order less [`UNREAD`] ([`super::columns`]).
pub fn from_sqlite(f: &mut Fields<'_, '_>) -> rusqlite::Result<tenant::Model> {
    f.table::<tenant::Column, _>(UNREAD, |f| {
        Ok(tenant::Model {
            id: f.uuid(tenant::Column::Id)?,
            owner_id: f.uuid(tenant::Column::OwnerId)?,
            name: f.get(tenant::Column::Name)?,
            fingerprint_tokens: f.get(tenant::Column::FingerprintTokens)?,
            deduplicate_tokens: f.get(tenant::Column::DeduplicateTokens)?,
            created_by: f.opt_uuid(tenant::Column::CreatedBy)?,
            created_at: f.time(tenant::Column::CreatedAt)?,
            modified_by: f.opt_uuid(tenant::Column::ModifiedBy)?,
            modified_at: f.opt_time(tenant::Column::ModifiedAt)?,
            data_key: None,
            deleted_at: None,
        })
    })
}

/// A tenant's settings, as every keyed read selects them after its key's application.
const SETTINGS: [tenant::Column; 2] = [
    tenant::Column::FingerprintTokens,
    tenant::Column::DeduplicateTokens,
];

/// `SETTINGS` of the tenant under `alias`, in their order; with a `prefix`, each
/// `AS "{prefix}{column}"`, as SeaORM reads them back ([`settings_of`]).
pub fn settings_columns(alias: &str, prefix: Option<&str>) -> String {
    SETTINGS
        .iter()
        .map(|c| match prefix {
            Some(prefix) => format!("{alias}.\"{c}\" AS \"{prefix}{c}\"", c = c.to_string()),
            None => format!("{alias}.{}", c.to_string()),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The settings a rusqlite row holds where [`settings_columns`] selected them.
pub fn settings_from_sqlite(f: &mut Fields<'_, '_>) -> rusqlite::Result<TenantSettings> {
    Ok(TenantSettings {
        fingerprint_tokens: f.get(tenant::Column::FingerprintTokens)?,
        deduplicate_tokens: f.get(tenant::Column::DeduplicateTokens)?,
    })
}

/// The settings a PostgreSQL row holds under `prefix` ([`settings_columns`]).
pub fn settings_of(row: &QueryResult, prefix: &str) -> Result<TenantSettings, DbErr> {
    let get = |c: tenant::Column| row.try_get::<bool>(prefix, &c.to_string());
    Ok(TenantSettings {
        fingerprint_tokens: get(tenant::Column::FingerprintTokens)?,
        deduplicate_tokens: get(tenant::Column::DeduplicateTokens)?,
    })
}
