//! The `reactor_formulas` and `reactors` rows as the fast paths read them (their conversion to
//! the domain stays with their repository, `reactors.rs`).

use super::Fields;
use crate::entity::{formula, reactor};

/// A `reactor_formulas` row read in the entity's column order ([`super::columns`]).
pub(crate) fn formula_from_sqlite(f: &mut Fields<'_, '_>) -> rusqlite::Result<formula::Model> {
    f.table::<formula::Column, _>(&[], |f| {
        Ok(formula::Model {
            tenant_id: f.uuid()?,
            id: f.uuid()?,
            name: f.get()?,
            description: f.get()?,
            formula_type: f.get()?,
            code: f.get()?,
            configuration: f.get()?,
            request_parameters: f.get()?,
            created_by: f.opt_uuid()?,
            created_at: f.time()?,
            modified_by: f.opt_uuid()?,
            modified_at: f.opt_time()?,
        })
    })
}

/// A `reactors` row read in the entity's column order ([`super::columns`]).
pub(crate) fn reactor_from_sqlite(f: &mut Fields<'_, '_>) -> rusqlite::Result<reactor::Model> {
    f.table::<reactor::Column, _>(&[], |f| {
        Ok(reactor::Model {
            tenant_id: f.uuid()?,
            id: f.uuid()?,
            name: f.get()?,
            formula_id: f.uuid()?,
            configuration: f.get()?,
            application_id: f.opt_uuid()?,
            created_by: f.opt_uuid()?,
            created_at: f.time()?,
            modified_by: f.opt_uuid()?,
            modified_at: f.opt_time()?,
        })
    })
}
