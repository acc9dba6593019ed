//! `POST /reactors/{id}/react` with the reactor read beside the caller's key, and formulas.
//! Here: the formula, reactor and application the tests share; the tests by concern: the
//! reactor read with the key (`key_read`), the token its arguments name read with it too
//! (`token_read`), and a formula's status, new code and deletion (`formulas`).

use serde_json::{Map, json};

use super::*;

const CODE: &str = "module.exports = async (req) => ({ raw: req.configuration });";

fn formula(tenant_id: Uuid) -> Formula {
    Formula {
        id: Uuid::from_u128(300),
        tenant_id,
        name: "f".into(),
        description: None,
        formula_type: "private".into(),
        code: CODE.into(),
        configuration: vec![],
        request_parameters: vec![],
        created_by: None,
        created_at: now(),
        modified_by: None,
        modified_at: None,
        status: None,
    }
}

fn reactor(tenant_id: Uuid, id: u128) -> Reactor {
    let mut configuration = Map::new();
    configuration.insert("region".into(), json!("eu"));
    Reactor {
        id: Uuid::from_u128(id),
        tenant_id,
        name: "r".into(),
        formula_id: Uuid::from_u128(300),
        configuration,
        application_id: None,
        created_by: None,
        created_at: now(),
        modified_by: None,
        modified_at: None,
    }
}

const TENANT: Uuid = Uuid::from_u128(100);

fn user(permissions: Vec<Permission>) -> Application {
    let mut app = stored_app(TENANT, None);
    app.permissions = permissions;
    app
}

mod formulas;
mod key_read;
mod token_read;
