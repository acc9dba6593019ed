//! What the formula and reactor contract suites share: the repositories on a fresh database
//! per backend, and values to store.

#![allow(dead_code, clippy::unwrap_used)]

use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use tokenvault_domain::formula::{
    ConfigDeclaration, Formula, FormulaStatus, ParamType, RequestParameter,
};
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::reactor::Reactor;
use tokenvault_persistence::testing::{TestDatabase, read_paths};
use tokenvault_persistence::{
    SeaOrmFormulaRepository, SeaOrmReactorRepository, SeaOrmTenantRepository,
};
use uuid::Uuid;

use crate::common::tenant;

pub struct Repos {
    pub tenants: SeaOrmTenantRepository,
    pub formulas: SeaOrmFormulaRepository,
    pub reactors: SeaOrmReactorRepository,
    pub tenant: Uuid,
}

pub fn formula(tenant_id: Uuid, name: &str, created_at: OffsetDateTime) -> Formula {
    Formula {
        id: Uuid::now_v7(),
        tenant_id,
        name: name.into(),
        description: Some("Charges a card".into()),
        formula_type: "private".into(),
        code: "module.exports = async function (req) { return { raw: req.args }; };".into(),
        configuration: vec![
            ConfigDeclaration {
                name: "API_KEY".into(),
                description: Some("the provider's key".into()),
                param_type: ParamType::String,
            },
            ConfigDeclaration {
                name: "retries".into(),
                description: None,
                param_type: ParamType::Number,
            },
        ],
        request_parameters: vec![
            RequestParameter {
                name: "card.number".into(),
                description: Some("a token".into()),
                param_type: ParamType::String,
                optional: false,
            },
            RequestParameter {
                name: "capture".into(),
                description: None,
                param_type: ParamType::Boolean,
                optional: true,
            },
        ],
        created_by: Some(Uuid::now_v7()),
        created_at,
        modified_by: None,
        modified_at: None,
        status: Some(FormulaStatus::Verified),
    }
}

pub fn config(value: &Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

pub fn reactor(
    tenant_id: Uuid,
    formula_id: Uuid,
    name: &str,
    created_at: OffsetDateTime,
) -> Reactor {
    Reactor {
        id: Uuid::now_v7(),
        tenant_id,
        name: name.into(),
        formula_id,
        configuration: config(&json!({"API_KEY": "k-1", "retries": 3, "live": true})),
        application_id: Some(Uuid::now_v7()),
        created_by: Some(Uuid::now_v7()),
        created_at,
        modified_by: None,
        modified_at: None,
    }
}

pub async fn each_backend<F, Fut>(story: F)
where
    F: Fn(Repos) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for (backend, refused) in read_paths() {
        let db = TestDatabase::create(backend).await;
        db.db.refuse_direct_reads(refused);
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let tenant = tenant(&tenants).await;
        story(Repos {
            tenants,
            formulas: SeaOrmFormulaRepository::new(db.db.clone()),
            reactors: SeaOrmReactorRepository::new(db.db.clone()),
            tenant,
        })
        .await;
        db.destroy().await;
    }
}

pub fn names<T>(page: &Page<T>, name: impl Fn(&T) -> &str) -> Vec<String> {
    page.items.iter().map(|i| name(i).to_string()).collect()
}

pub fn page(page: u64, size: u64) -> PageRequest {
    PageRequest { page, size }
}
