//! What the tests build from: the clock's `now`, an API key and its hashing, a tenant's row,
//! the vault over the mocks, a caller, a stored application, a new private one.

use super::*;

pub(super) fn now() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap()
}

pub(super) const KEY: &str = "key_0123456789abcdefghijABCDEFGHIJkl";

pub(super) fn keys() -> MockKeys {
    let mut keys = MockKeys::new();
    keys.expect_generate()
        .returning(|| ApiKey::parse(KEY).unwrap());
    keys.expect_hash()
        .returning(|k| KeyHash([k.expose().as_bytes()[5]; 32]));
    keys
}

/// A live tenant `id` as its repository returns it.
pub(super) fn tenant_row(id: Uuid) -> Tenant {
    Tenant {
        id,
        owner_id: id,
        name: "t".into(),
        settings: TenantSettings::default(),
        created_by: None,
        created_at: now(),
        modified_by: None,
        modified_at: None,
    }
}

pub(super) fn vault(tenants: MockTenants, applications: MockApplications) -> Vault {
    Vault::new(ports(tenants, applications))
}

pub(super) fn ports(tenants: MockTenants, applications: MockApplications) -> Ports {
    let mut cipher = MockCiph::new();
    cipher
        .expect_new_tenant_key()
        .returning(|_| Ok(vec![1, 2, 3]));
    cipher.expect_forget_tenant_key().return_const(());
    Ports {
        tenants: Arc::new(tenants),
        applications: Arc::new(applications),
        keys: Arc::new(keys()),
        clock: Arc::new(FixedClock),
        tokens: Arc::new(MockTokens::new()),
        usage: Arc::new(MockUsage::new()),
        cipher: Arc::new(cipher),
        expressions: Arc::new(MockExprs::new()),
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

pub(super) fn principal(permissions: &[Permission]) -> Principal {
    Principal {
        application_id: Uuid::from_u128(1),
        tenant_id: Uuid::from_u128(100),
        app_type: ApplicationType::Management,
        permissions: permissions.to_vec(),
        rules: vec![],
        settings: TenantSettings::default(),
        session: None,
        trace_id: None,
    }
}

pub(super) fn stored_app(tenant_id: Uuid, expires_at: Option<OffsetDateTime>) -> Application {
    Application {
        id: Uuid::from_u128(7),
        tenant_id,
        name: "app".into(),
        app_type: ApplicationType::Private,
        permissions: vec![Permission::TokenRead],
        rules: vec![],
        created_by: None,
        created_at: now() - Duration::days(1),
        modified_by: None,
        modified_at: None,
        expires_at,
    }
}

pub(super) fn new_private() -> RawNewApplication {
    RawNewApplication {
        name: Some("backend".into()),
        app_type: Some("private".into()),
        permissions: vec!["token:read".into()],
        ..Default::default()
    }
}
