//! Token use cases: create, read, update, dedup, usage. Here: the vault over a token store
//! and the callers and rows the tests share; the tests by concern: creating tokens (`create`),
//! reading, listing and detokenizing them (`read`), and reading one with the caller's key
//! (`key_read`).

use super::*;
use crate::access::{AccessRule, RuleScope, Transform};
use crate::container::Container;

fn cipher() -> MockCiph {
    let mut c = MockCiph::new();
    c.expect_has_tenant_key().return_const(true);
    c.expect_encrypt()
        .returning(|_, _, p| Ok([b"ct:".as_slice(), p].concat()));
    c.expect_decrypt().returning(|_, _, c| Ok(c[3..].to_vec()));
    c.expect_fingerprint()
        .returning(|_, input| Ok(format!("fp{}", input.len())));
    c.expect_search_term()
        .returning(|_, input| Ok(format!("st{}", String::from_utf8_lossy(input))));
    c
}

fn exprs() -> MockExprs {
    let mut e = MockExprs::new();
    e.expect_check().returning(|_| Ok(()));
    e.expect_render_metered()
        .returning(|_, data, _| Ok(data.to_string()));
    e
}

pub(super) fn token_vault(tokens: MockTokens) -> Vault {
    Vault::new(token_ports(tokens))
}

pub(super) fn token_ports(tokens: MockTokens) -> Ports {
    Ports {
        tenants: Arc::new(MockTenants::new()),
        applications: Arc::new(MockApplications::new()),
        keys: Arc::new(keys()),
        clock: Arc::new(FixedClock),
        tokens: Arc::new(tokens),
        usage: Arc::new(MockUsage::new()),
        cipher: Arc::new(cipher()),
        expressions: Arc::new(exprs()),
        formulas: Arc::new(NoFormulas),
        reactors: Arc::new(NoReactors),
        code: Arc::new(MockCode::new()),
        svc: Arc::new(NoSvc),
        proxies: Arc::new(NoProxies),
        forwarder: Arc::new(NoForwarder),
        idempotency: Arc::new(NoIdempotency),
        sessions: Arc::new(MockSessions::new()),
        audit: Arc::new(NoAudit::default()),
    }
}

pub(super) fn caller(
    permissions: &[Permission],
    rules: Vec<AccessRule>,
    settings: TenantSettings,
) -> Principal {
    Principal {
        application_id: Uuid::from_u128(1),
        tenant_id: Uuid::from_u128(100),
        app_type: ApplicationType::Private,
        permissions: permissions.to_vec(),
        rules,
        settings,
        session: None,
        trace_id: None,
    }
}

pub(super) fn rule(
    container: &str,
    transform: Transform,
    permissions: &[Permission],
) -> AccessRule {
    AccessRule {
        description: None,
        priority: 1,
        scope: RuleScope::Container(Container::parse(container).unwrap()),
        transform,
        permissions: permissions.to_vec(),
    }
}

pub(super) fn stored(id: &str, container: &str, data: &serde_json::Value) -> StoredToken {
    StoredToken {
        id: id.into(),
        tenant_id: Uuid::from_u128(100),
        token_type: "card_number".into(),
        container: container.into(),
        metadata: std::collections::BTreeMap::new(),
        data: [b"ct:".as_slice(), data.to_string().as_bytes()].concat(),
        mask: None,
        fingerprint: None,
        dedup_key: None,
        fingerprint_expression: None,
        created_by: None,
        created_at: now(),
        modified_by: None,
        modified_at: None,
        expires_at: None,
        deduplicate: None,
        search_indexes: vec![],
        search_terms: vec![],
        version: 0,
    }
}

mod create;
mod key_read;
mod read;
