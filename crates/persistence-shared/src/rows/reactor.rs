//! The `reactor_formulas` and `reactors` rows: the domain's [`Formula`] and [`Reactor`], their
//! declarations and configuration stored as JSON text.

use sea_orm::ActiveValue::Set;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokenvault_domain::RepoError;
use tokenvault_domain::formula::{
    ConfigDeclaration, Formula, FormulaStatus, ParamType, RequestParameter,
};
use tokenvault_domain::reactor::Reactor;
use uuid::Uuid;

use super::Fields;
use crate::entity::{formula, reactor};
use crate::stamp::{stamp, unstamp};

/// A `reactor_formulas` row read in the entity's column order ([`super::columns`]).
pub fn formula_from_sqlite(f: &mut Fields<'_, '_>) -> rusqlite::Result<formula::Model> {
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
            status: f.get(formula::Column::Status)?,
        })
    })
}

/// A `reactors` row read in the entity's column order ([`super::columns`]).
pub fn reactor_from_sqlite(f: &mut Fields<'_, '_>) -> rusqlite::Result<reactor::Model> {
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

/// Stored shape of one configuration declaration.
#[derive(Serialize, Deserialize)]
struct ConfigRecord {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(rename = "type")]
    param_type: String,
}

/// Stored shape of one request parameter declaration.
#[derive(Serialize, Deserialize)]
struct ParameterRecord {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(rename = "type")]
    param_type: String,
    #[serde(default)]
    optional: bool,
}

fn corrupt(what: &str, kind: &str, id: Uuid) -> RepoError {
    RepoError::Backend(format!("stored {what} of {kind} {id} is unreadable").into())
}

/// A formula's configuration declarations as stored: JSON text.
pub(crate) fn configuration_json(declared: &[ConfigDeclaration]) -> String {
    let records: Vec<ConfigRecord> = declared
        .iter()
        .map(|d| ConfigRecord {
            name: d.name.clone(),
            description: d.description.clone(),
            param_type: d.param_type.as_str().to_string(),
        })
        .collect();
    serde_json::to_string(&records).unwrap_or_else(|_| "[]".into())
}

/// A formula's request parameters as stored: JSON text.
pub(crate) fn parameters_json(declared: &[RequestParameter]) -> String {
    let records: Vec<ParameterRecord> = declared
        .iter()
        .map(|p| ParameterRecord {
            name: p.name.clone(),
            description: p.description.clone(),
            param_type: p.param_type.as_str().to_string(),
            optional: p.optional,
        })
        .collect();
    serde_json::to_string(&records).unwrap_or_else(|_| "[]".into())
}

/// A reactor's configuration values as stored: JSON text.
pub(crate) fn values_json(configuration: &Map<String, Value>) -> String {
    serde_json::to_string(configuration).unwrap_or_else(|_| "{}".into())
}

/// A stored row made a formula.
pub fn formula_to_domain(m: formula::Model) -> Result<Formula, RepoError> {
    let id = m.id;
    let bad = |what: &str| corrupt(what, "formula", id);
    let configuration: Vec<ConfigRecord> =
        serde_json::from_str(&m.configuration).map_err(|_| bad("configuration"))?;
    let parameters: Vec<ParameterRecord> =
        serde_json::from_str(&m.request_parameters).map_err(|_| bad("request parameters"))?;
    let configuration = configuration
        .into_iter()
        .map(|r| {
            Ok(ConfigDeclaration {
                param_type: ParamType::parse(&r.param_type)
                    .ok_or_else(|| bad("configuration type"))?,
                name: r.name,
                description: r.description,
            })
        })
        .collect::<Result<Vec<_>, RepoError>>()?;
    let request_parameters = parameters
        .into_iter()
        .map(|r| {
            Ok(RequestParameter {
                param_type: ParamType::parse(&r.param_type)
                    .ok_or_else(|| bad("request parameter type"))?,
                name: r.name,
                description: r.description,
                optional: r.optional,
            })
        })
        .collect::<Result<Vec<_>, RepoError>>()?;
    Ok(Formula {
        id,
        tenant_id: m.tenant_id,
        name: m.name,
        description: m.description,
        formula_type: m.formula_type,
        code: m.code,
        configuration,
        request_parameters,
        created_by: m.created_by,
        created_at: unstamp(m.created_at),
        modified_by: m.modified_by,
        modified_at: m.modified_at.map(unstamp),
        status: m
            .status
            .map(|s| FormulaStatus::parse(&s).ok_or_else(|| bad("status")))
            .transpose()?,
    })
}

/// A formula as a row to insert.
pub(crate) fn formula_to_active(f: &Formula) -> formula::ActiveModel {
    formula::ActiveModel {
        tenant_id: Set(f.tenant_id),
        id: Set(f.id),
        name: Set(f.name.clone()),
        description: Set(f.description.clone()),
        formula_type: Set(f.formula_type.clone()),
        code: Set(f.code.clone()),
        configuration: Set(configuration_json(&f.configuration)),
        request_parameters: Set(parameters_json(&f.request_parameters)),
        created_by: Set(f.created_by),
        created_at: Set(stamp(f.created_at)),
        modified_by: Set(f.modified_by),
        modified_at: Set(f.modified_at.map(stamp)),
        status: Set(f.status.map(|s| s.as_str().to_string())),
    }
}

/// A stored row made a reactor.
pub fn reactor_to_domain(m: reactor::Model) -> Result<Reactor, RepoError> {
    let configuration: Map<String, Value> = serde_json::from_str(&m.configuration)
        .map_err(|_| corrupt("configuration", "reactor", m.id))?;
    Ok(Reactor {
        id: m.id,
        tenant_id: m.tenant_id,
        name: m.name,
        formula_id: m.formula_id,
        configuration,
        application_id: m.application_id,
        created_by: m.created_by,
        created_at: unstamp(m.created_at),
        modified_by: m.modified_by,
        modified_at: m.modified_at.map(unstamp),
    })
}

/// A reactor as a row to insert.
pub(crate) fn reactor_to_active(r: &Reactor) -> reactor::ActiveModel {
    reactor::ActiveModel {
        tenant_id: Set(r.tenant_id),
        id: Set(r.id),
        name: Set(r.name.clone()),
        formula_id: Set(r.formula_id),
        configuration: Set(values_json(&r.configuration)),
        application_id: Set(r.application_id),
        created_by: Set(r.created_by),
        created_at: Set(stamp(r.created_at)),
        modified_by: Set(r.modified_by),
        modified_at: Set(r.modified_at.map(stamp)),
    }
}
