//! The `reactor_formulas` and `reactors` rows as the fast paths read them (their conversion to
//! the domain stays with their repository, `reactors.rs`).

use super::Fields;
use crate::entity::{formula, reactor};

/// A `reactor_formulas` row read in the entity's column order ([`super::columns`]).
pub(crate) fn formula_from_sqlite(f: &mut Fields<'_, '_>) -> rusqlite::Result<formula::Model> {
    f.table::<formula::Column, _>(&[], |f| {
        Ok(formula::Model {
            tenant_id: f.uuid(formula::Column::TenantId)?,
            id: f.uuid(formula::Column::Id)?,
            name: f.get(formula::Column::Name)?,
            description: f.get(formula::Column::Description)?,
            formula_type: f.get(formula::Column::FormulaType)?,
            code: f.get(formula::Column::Code)?,
            configuration: f.get(formula::Column::Configuration)?,
            request_parameters: f.get(formula::Column::RequestParameters)?,
            created_by: f.opt_uuid(formula::Column::CreatedBy)?,
            created_at: f.time(formula::Column::CreatedAt)?,
            modified_by: f.opt_uuid(formula::Column::ModifiedBy)?,
            modified_at: f.opt_time(formula::Column::ModifiedAt)?,
        })
    })
}

/// A `reactors` row read in the entity's column order ([`super::columns`]).
pub(crate) fn reactor_from_sqlite(f: &mut Fields<'_, '_>) -> rusqlite::Result<reactor::Model> {
    f.table::<reactor::Column, _>(&[], |f| {
        Ok(reactor::Model {
            tenant_id: f.uuid(reactor::Column::TenantId)?,
            id: f.uuid(reactor::Column::Id)?,
            name: f.get(reactor::Column::Name)?,
            formula_id: f.uuid(reactor::Column::FormulaId)?,
            configuration: f.get(reactor::Column::Configuration)?,
            application_id: f.opt_uuid(reactor::Column::ApplicationId)?,
            created_by: f.opt_uuid(reactor::Column::CreatedBy)?,
            created_at: f.time(reactor::Column::CreatedAt)?,
            modified_by: f.opt_uuid(reactor::Column::ModifiedBy)?,
            modified_at: f.opt_time(reactor::Column::ModifiedAt)?,
        })
    })
}
