//! The `tenants` rows: the domain's [`Tenant`] (the wrapped data key is read on its own).

use tokenvault_domain::tenant::{Tenant, TenantSettings};

use crate::entity::tenant;
use crate::stamp::unstamp;

pub(crate) fn to_domain(model: tenant::Model) -> Tenant {
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
