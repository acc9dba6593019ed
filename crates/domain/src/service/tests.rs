//! Use-case tests against mockall mocks of every port.

use std::sync::Arc;

use async_trait::async_trait;
use mockall::mock;
use mockall::predicate::eq;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{Ports, Vault};
use crate::application::{ApiKey, Application, KeyHash, RawApplicationUpdate, RawNewApplication};
use crate::auth::Principal;
use crate::code::{CodeCall, CodeError, CodeRunner, Svc, SvcFactory};
use crate::error::{Error, RepoError};
use crate::page::{Page, PageRequest};
use crate::permission::{ApplicationType, Permission};
use crate::ports::{
    ApplicationRepository, Cipher, CipherError, Clock, Expressions, FormulaDelete,
    FormulaRepository, KeyService, ReactorRepository, TenantRepository, TokenFilter,
    TokenRepository, TokenWrite, TypeCount,
};
use crate::reactor::{Formula, Reactor};
use crate::tenant::{RawTenantUpdate, Tenant, TenantSettings};
use crate::token::StoredToken;

mock! {
    Tenants {}
    #[async_trait]
    impl TenantRepository for Tenants {
        async fn create_with_application(&self, tenant: &Tenant, wrapped_data_key: &[u8], application: &Application, key_hash: &KeyHash) -> Result<(), RepoError>;
        async fn data_key(&self, id: Uuid) -> Result<Option<Vec<u8>>, RepoError>;
        async fn data_keys(&self) -> Result<Vec<(Uuid, Vec<u8>)>, RepoError>;
        async fn replace_data_key(&self, id: Uuid, old: &[u8], new: &[u8]) -> Result<bool, RepoError>;
        async fn get(&self, id: Uuid) -> Result<Option<Tenant>, RepoError>;
        async fn update(&self, tenant: &Tenant) -> Result<bool, RepoError>;
        async fn delete(&self, id: Uuid) -> Result<bool, RepoError>;
        async fn any(&self) -> Result<bool, RepoError>;
    }
}

mock! {
    Applications {}
    #[async_trait]
    impl ApplicationRepository for Applications {
        async fn insert(&self, application: &Application, key_hash: &KeyHash) -> Result<(), RepoError>;
        async fn find_by_key_hash(&self, hash: &KeyHash) -> Result<Option<(Application, TenantSettings)>, RepoError>;
        async fn get(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Application>, RepoError>;
        async fn list(&self, tenant_id: Uuid, ids: &[Uuid], page: PageRequest) -> Result<Page<Application>, RepoError>;
        async fn update(&self, application: &Application) -> Result<bool, RepoError>;
        async fn replace_key(&self, application: &Application, key_hash: &KeyHash) -> Result<bool, RepoError>;
        async fn delete(&self, tenant_id: Uuid, id: Uuid) -> Result<bool, RepoError>;
        async fn delete_expired(&self, now: OffsetDateTime) -> Result<u64, RepoError>;
    }
}

mock! {
    pub Tokens {}
    #[async_trait]
    impl TokenRepository for Tokens {
        async fn insert(&self, token: &StoredToken) -> Result<TokenWrite, RepoError>;
        async fn insert_all(&self, tokens: &[StoredToken]) -> Result<TokenWrite, RepoError>;
        async fn get(&self, tenant_id: Uuid, id: &str, now: OffsetDateTime) -> Result<Option<StoredToken>, RepoError>;
        async fn get_many(&self, tenant_id: Uuid, ids: &[String], now: OffsetDateTime) -> Result<Vec<StoredToken>, RepoError>;
        async fn find_by_fingerprint(&self, tenant_id: Uuid, token_type: &str, container: &str, fingerprint: &str, now: OffsetDateTime) -> Result<Option<StoredToken>, RepoError>;
        async fn update(&self, token: &StoredToken) -> Result<TokenWrite, RepoError>;
        async fn delete(&self, tenant_id: Uuid, id: &str) -> Result<bool, RepoError>;
        async fn list(&self, tenant_id: Uuid, filter: &TokenFilter, page: PageRequest, now: OffsetDateTime) -> Result<Page<StoredToken>, RepoError>;
        async fn delete_expired(&self, now: OffsetDateTime) -> Result<u64, RepoError>;
        async fn count_by_type(&self, tenant_id: Uuid, now: OffsetDateTime) -> Result<Vec<TypeCount>, RepoError>;
        async fn associate(&self, tenant_id: Uuid, parent: &str, child: &str) -> Result<TokenWrite, RepoError>;
        async fn dissociate(&self, tenant_id: Uuid, parent: &str, child: &str) -> Result<bool, RepoError>;
        async fn record_activity(&self, entries: &[(Uuid, String, String)]) -> Result<(), RepoError>;
        async fn count_active(&self, tenant_id: Uuid, month: &str) -> Result<u64, RepoError>;
    }
}

mock! {
    pub Ciph {}
    impl Cipher for Ciph {
        fn new_tenant_key(&self, tenant_id: Uuid) -> Vec<u8>;
        fn has_tenant_key(&self, tenant_id: Uuid) -> bool;
        fn load_tenant_key(&self, tenant_id: Uuid, wrapped: &[u8]) -> Result<(), CipherError>;
        fn forget_tenant_key(&self, tenant_id: Uuid);
        fn encrypt(&self, tenant_id: Uuid, context: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, CipherError>;
        fn decrypt(&self, tenant_id: Uuid, context: &[u8], ciphertext: &[u8]) -> Result<Vec<u8>, CipherError>;
        fn fingerprint(&self, tenant_id: Uuid, input: &[u8]) -> Result<String, CipherError>;
        fn rewrap(&self, tenant_id: Uuid, wrapped: &[u8]) -> Result<Option<Vec<u8>>, CipherError>;
    }
}

mock! {
    pub Exprs {}
    impl Expressions for Exprs {
        fn check(&self, expression: &str) -> Result<(), String>;
        fn render(&self, expression: &str, data: &serde_json::Value) -> Result<String, String>;
    }
}

/// `svc` for tests that never run code.
struct NoSvc;

impl SvcFactory for NoSvc {
    fn for_application(&self, _: Vault, _: Principal) -> Arc<dyn Svc> {
        Arc::new(NoSvc)
    }
}

#[async_trait]
impl Svc for NoSvc {
    async fn call(
        &self,
        _: &str,
        _: Vec<serde_json::Value>,
    ) -> Result<serde_json::Value, serde_json::Value> {
        Err(serde_json::Value::Null)
    }
}

/// Formula storage for tests that never reach it: everything is missing.
struct NoFormulas;

#[async_trait]
impl FormulaRepository for NoFormulas {
    async fn insert(&self, _: &Formula) -> Result<(), RepoError> {
        Err(RepoError::Backend("no formulas in this test".into()))
    }
    async fn get(&self, _: Uuid, _: Uuid) -> Result<Option<Formula>, RepoError> {
        Ok(None)
    }
    async fn get_many(&self, _: Uuid, _: &[Uuid]) -> Result<Vec<Formula>, RepoError> {
        Ok(Vec::new())
    }
    async fn list(
        &self,
        _: Uuid,
        _: &[Uuid],
        _: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<Formula>, RepoError> {
        Ok(Page {
            items: Vec::new(),
            total_items: 0,
            request: page,
        })
    }
    async fn update(&self, _: &Formula) -> Result<bool, RepoError> {
        Ok(false)
    }
    async fn delete(&self, _: Uuid, _: Uuid) -> Result<FormulaDelete, RepoError> {
        Ok(FormulaDelete::Missing)
    }
}

/// Reactor storage for tests that never reach it: everything is missing.
struct NoReactors;

#[async_trait]
impl ReactorRepository for NoReactors {
    async fn insert(&self, _: &Reactor) -> Result<(), RepoError> {
        Err(RepoError::Backend("no reactors in this test".into()))
    }
    async fn get(&self, _: Uuid, _: Uuid) -> Result<Option<Reactor>, RepoError> {
        Ok(None)
    }
    async fn list(
        &self,
        _: Uuid,
        _: &[Uuid],
        _: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<Reactor>, RepoError> {
        Ok(Page {
            items: Vec::new(),
            total_items: 0,
            request: page,
        })
    }
    async fn update(&self, _: &Reactor) -> Result<bool, RepoError> {
        Ok(false)
    }
    async fn delete(&self, _: Uuid, _: Uuid) -> Result<bool, RepoError> {
        Ok(false)
    }
}

mock! {
    pub Code {}
    #[async_trait]
    impl CodeRunner for Code {
        async fn check(&self, code: &str) -> Result<(), String>;
        async fn run(&self, call: CodeCall) -> Result<serde_json::Value, CodeError>;
    }
}

mock! {
    Keys {}
    impl KeyService for Keys {
        fn generate(&self) -> ApiKey;
        fn hash(&self, key: &ApiKey) -> KeyHash;
    }
}

struct FixedClock;

impl Clock for FixedClock {
    fn now(&self) -> OffsetDateTime {
        now()
    }
    fn new_id(&self) -> Uuid {
        Uuid::now_v7()
    }
}

fn now() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap()
}

const KEY: &str = "key_0123456789abcdefghijABCDEFGHIJkl";

fn keys() -> MockKeys {
    let mut keys = MockKeys::new();
    keys.expect_generate()
        .returning(|| ApiKey::parse(KEY).unwrap());
    keys.expect_hash()
        .returning(|k| KeyHash([k.expose().as_bytes()[5]; 32]));
    keys
}

fn vault(tenants: MockTenants, applications: MockApplications) -> Vault {
    let mut cipher = MockCiph::new();
    cipher.expect_new_tenant_key().returning(|_| vec![1, 2, 3]);
    cipher.expect_forget_tenant_key().return_const(());
    Vault::new(Ports {
        tenants: Arc::new(tenants),
        applications: Arc::new(applications),
        keys: Arc::new(keys()),
        clock: Arc::new(FixedClock),
        tokens: Arc::new(MockTokens::new()),
        cipher: Arc::new(cipher),
        expressions: Arc::new(MockExprs::new()),
        formulas: Arc::new(NoFormulas),
        reactors: Arc::new(NoReactors),
        code: Arc::new(MockCode::new()),
        svc: Arc::new(NoSvc),
    })
}

fn principal(permissions: &[Permission]) -> Principal {
    Principal {
        application_id: Uuid::from_u128(1),
        tenant_id: Uuid::from_u128(100),
        app_type: ApplicationType::Management,
        permissions: permissions.to_vec(),
        rules: vec![],
        settings: TenantSettings::default(),
    }
}

fn stored_app(tenant_id: Uuid, expires_at: Option<OffsetDateTime>) -> Application {
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

fn new_private() -> RawNewApplication {
    RawNewApplication {
        name: Some("backend".into()),
        app_type: Some("private".into()),
        permissions: vec!["token:read".into()],
        ..Default::default()
    }
}

#[tokio::test]
async fn malformed_or_missing_key_never_reaches_storage() {
    let mut apps = MockApplications::new();
    apps.expect_find_by_key_hash().never();
    let vault = vault(MockTenants::new(), apps);
    assert!(matches!(
        vault.authenticate(None).await,
        Err(Error::Unauthenticated)
    ));
    assert!(matches!(
        vault.authenticate(Some("not-a-key")).await,
        Err(Error::Unauthenticated)
    ));
}

#[tokio::test]
async fn expired_application_is_unauthenticated_at_once() {
    let mut apps = MockApplications::new();
    apps.expect_find_by_key_hash().returning(|_| {
        Ok(Some((
            stored_app(Uuid::from_u128(100), Some(now())),
            TenantSettings::default(),
        )))
    });
    let vault = vault(MockTenants::new(), apps);
    assert!(matches!(
        vault.authenticate(Some(KEY)).await,
        Err(Error::Unauthenticated)
    ));
}

#[tokio::test]
async fn valid_key_yields_its_application() {
    let mut apps = MockApplications::new();
    apps.expect_find_by_key_hash().returning(|_| {
        Ok(Some((
            stored_app(Uuid::from_u128(100), Some(now() + Duration::seconds(1))),
            TenantSettings {
                fingerprint_tokens: true,
                deduplicate_tokens: false,
            },
        )))
    });
    let vault = vault(MockTenants::new(), apps);
    let p = vault.authenticate(Some(KEY)).await.unwrap();
    assert_eq!(p.application_id, Uuid::from_u128(7));
    assert_eq!(p.permissions, vec![Permission::TokenRead]);
    assert!(p.settings.fingerprint_tokens, "settings come with the key");
}

#[tokio::test]
async fn create_without_permission_is_forbidden_and_stores_nothing() {
    let mut apps = MockApplications::new();
    apps.expect_insert().never();
    let vault = vault(MockTenants::new(), apps);
    let err = vault
        .create_application(&principal(&[Permission::ApplicationRead]), new_private())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Forbidden));
}

#[tokio::test]
async fn invalid_create_stores_nothing() {
    let mut apps = MockApplications::new();
    apps.expect_insert().never();
    let vault = vault(MockTenants::new(), apps);
    let mut raw = new_private();
    raw.permissions = vec!["tenant:delete".into()];
    let err = vault
        .create_application(&principal(&[Permission::ApplicationCreate]), raw)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Validation(v) if v.contains("permissions.0")));
}

#[tokio::test]
async fn create_stores_hash_in_callers_tenant() {
    let mut apps = MockApplications::new();
    apps.expect_insert()
        .withf(|app, hash| {
            app.tenant_id == Uuid::from_u128(100)
                && app.created_by == Some(Uuid::from_u128(1))
                && *hash == KeyHash([KEY.as_bytes()[5]; 32])
        })
        .times(1)
        .returning(|_, _| Ok(()));
    let vault = vault(MockTenants::new(), apps);
    let (app, key) = vault
        .create_application(&principal(&[Permission::ApplicationCreate]), new_private())
        .await
        .unwrap();
    assert_eq!(key.expose(), KEY);
    assert_eq!(app.created_at, now());
}

#[tokio::test]
async fn reads_are_confined_to_the_callers_tenant() {
    let mut apps = MockApplications::new();
    apps.expect_get()
        .with(eq(Uuid::from_u128(100)), eq(Uuid::from_u128(7)))
        .returning(|_, _| Ok(None));
    let vault = vault(MockTenants::new(), apps);
    let err = vault
        .get_application(
            &principal(&[Permission::ApplicationRead]),
            Uuid::from_u128(7),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound));
}

#[tokio::test]
async fn update_checks_type_of_stored_application() {
    let mut apps = MockApplications::new();
    apps.expect_get()
        .returning(|t, _| Ok(Some(stored_app(t, None))));
    apps.expect_update().never();
    let vault = vault(MockTenants::new(), apps);
    let raw = RawApplicationUpdate {
        name: Some("x".into()),
        permissions: vec!["application:read".into()],
        rules: vec![],
    };
    let err = vault
        .update_application(
            &principal(&[Permission::ApplicationUpdate]),
            Uuid::from_u128(7),
            raw,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Validation(v) if v.contains("permissions.0")));
}

#[tokio::test]
async fn regenerate_replaces_the_key_hash() {
    let mut apps = MockApplications::new();
    apps.expect_get()
        .returning(|t, _| Ok(Some(stored_app(t, None))));
    apps.expect_replace_key()
        .withf(|app, _| app.modified_by == Some(Uuid::from_u128(1)))
        .times(1)
        .returning(|_, _| Ok(true));
    let vault = vault(MockTenants::new(), apps);
    let (_, key) = vault
        .regenerate_key(
            &principal(&[Permission::ApplicationUpdate]),
            Uuid::from_u128(7),
        )
        .await
        .unwrap();
    assert_eq!(key.expose(), KEY);
}

#[tokio::test]
async fn delete_of_unknown_is_not_found() {
    let mut apps = MockApplications::new();
    apps.expect_get().returning(|_, _| Ok(None));
    apps.expect_delete().never();
    let vault = vault(MockTenants::new(), apps);
    let err = vault
        .delete_application(
            &principal(&[Permission::ApplicationDelete]),
            Uuid::from_u128(9),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound));
}

#[tokio::test]
async fn tenant_update_validates_before_loading() {
    let mut tenants = MockTenants::new();
    tenants.expect_get().never();
    tenants.expect_update().never();
    let vault = vault(tenants, MockApplications::new());
    let err = vault
        .update_tenant(
            &principal(&[Permission::TenantUpdate]),
            RawTenantUpdate::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Validation(v) if v.contains("name")));
}

#[tokio::test]
async fn bootstrap_only_on_an_empty_database() {
    let mut tenants = MockTenants::new();
    tenants.expect_any().returning(|| Ok(true));
    tenants.expect_create_with_application().never();
    let first = vault(tenants, MockApplications::new());
    assert!(first.bootstrap(None).await.unwrap().is_none());

    let mut tenants = MockTenants::new();
    tenants.expect_any().returning(|| Ok(false));
    tenants
        .expect_create_with_application()
        .withf(|t, k, a, _| {
            t.name == "Default" && k == [1, 2, 3] && a.permissions == Permission::management()
        })
        .times(1)
        .returning(|_, _, _, _| Ok(()));
    let vault = vault(tenants, MockApplications::new());
    let made = vault
        .bootstrap(Some(ApiKey::parse(KEY).unwrap()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(made.key.expose(), KEY);
}

#[tokio::test]
async fn purge_uses_the_clock() {
    let mut apps = MockApplications::new();
    apps.expect_delete_expired()
        .with(eq(now()))
        .returning(|_| Ok(3));
    let vault = vault(MockTenants::new(), apps);
    assert_eq!(vault.purge_expired_applications().await.unwrap(), 3);
}

#[tokio::test]
async fn storage_conflict_maps_to_conflict() {
    let mut apps = MockApplications::new();
    apps.expect_insert()
        .returning(|_, _| Err(RepoError::Conflict("key".into())));
    let vault = vault(MockTenants::new(), apps);
    let err = vault
        .create_application(&principal(&[Permission::ApplicationCreate]), new_private())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)));
}

// ---- token use cases ------------------------------------------------------------------------

mod tokens {
    use super::*;
    use crate::access::{AccessRule, Transform};
    use crate::container::Container;
    use crate::ports::Visibility;
    use crate::token::RawNewToken;
    use serde_json::json;

    fn cipher() -> MockCiph {
        let mut c = MockCiph::new();
        c.expect_has_tenant_key().return_const(true);
        c.expect_encrypt()
            .returning(|_, _, p| Ok([b"ct:".as_slice(), p].concat()));
        c.expect_decrypt().returning(|_, _, c| Ok(c[3..].to_vec()));
        c.expect_fingerprint()
            .returning(|_, input| Ok(format!("fp{}", input.len())));
        c
    }

    fn exprs() -> MockExprs {
        let mut e = MockExprs::new();
        e.expect_check().returning(|_| Ok(()));
        e.expect_render().returning(|_, data| Ok(data.to_string()));
        e
    }

    fn token_vault(tokens: MockTokens) -> Vault {
        Vault::new(Ports {
            tenants: Arc::new(MockTenants::new()),
            applications: Arc::new(MockApplications::new()),
            keys: Arc::new(keys()),
            clock: Arc::new(FixedClock),
            tokens: Arc::new(tokens),
            cipher: Arc::new(cipher()),
            expressions: Arc::new(exprs()),
            formulas: Arc::new(NoFormulas),
            reactors: Arc::new(NoReactors),
            code: Arc::new(MockCode::new()),
            svc: Arc::new(NoSvc),
        })
    }

    fn caller(
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
        }
    }

    fn rule(container: &str, transform: Transform, permissions: &[Permission]) -> AccessRule {
        AccessRule {
            description: None,
            priority: 1,
            container: Container::parse(container).unwrap(),
            transform,
            permissions: permissions.to_vec(),
        }
    }

    fn raw(ty: &str, data: serde_json::Value) -> RawNewToken {
        RawNewToken {
            token_type: Some(ty.into()),
            data: Some(data),
            ..RawNewToken::default()
        }
    }

    fn stored(id: &str, container: &str, data: &serde_json::Value) -> StoredToken {
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
        }
    }

    #[tokio::test]
    async fn create_outside_the_rule_container_is_forbidden_before_any_write() {
        let mut tokens = MockTokens::new();
        tokens.expect_insert().never();
        let vault = token_vault(tokens);
        let who = caller(
            &[],
            vec![rule(
                "/general/",
                Transform::Mask,
                &[Permission::TokenCreate],
            )],
            TenantSettings::default(),
        );
        let err = vault
            .create_token(&who, raw("card_number", json!("4242424242424242")))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Forbidden));
    }

    #[tokio::test]
    async fn data_is_encrypted_before_storage_and_never_returned_on_create() {
        let mut tokens = MockTokens::new();
        tokens
            .expect_insert()
            .withf(|t| {
                t.data.starts_with(b"ct:") && t.container == "/pci/high/" && t.fingerprint.is_none()
            })
            .times(1)
            .returning(|_| Ok(TokenWrite::Done));
        let vault = token_vault(tokens);
        let who = caller(
            &[Permission::TokenCreate],
            vec![],
            TenantSettings::default(),
        );
        let (view, created) = vault
            .create_token(&who, raw("card_number", json!("4242424242424242")))
            .await
            .unwrap();
        assert!(created);
        assert!(view.shown.is_none());
    }

    #[tokio::test]
    async fn losing_a_dedup_race_returns_the_winner() {
        let mut tokens = MockTokens::new();
        let winner = stored("winner", "/pci/high/", &json!("4242424242424242"));
        let mut lookups = 0;
        tokens
            .expect_find_by_fingerprint()
            .returning(move |_, _, _, _, _| {
                lookups += 1;
                // Nothing the first time (before the insert), the winner after the conflict.
                Ok((lookups > 1).then(|| winner.clone()))
            });
        tokens
            .expect_insert()
            .withf(|t| t.dedup_key.is_some())
            .times(1)
            .returning(|_| Ok(TokenWrite::DuplicateFingerprint));
        let vault = token_vault(tokens);
        let settings = TenantSettings {
            fingerprint_tokens: false,
            deduplicate_tokens: true,
        };
        let who = caller(&[Permission::TokenCreate], vec![], settings);
        let (view, created) = vault
            .create_token(&who, raw("card_number", json!("4242424242424242")))
            .await
            .unwrap();
        assert!(!created);
        assert_eq!(view.token.id, "winner");
    }

    #[tokio::test]
    async fn an_expired_duplicate_in_the_index_is_purged_not_a_conflict() {
        let mut tokens = MockTokens::new();
        tokens
            .expect_find_by_fingerprint()
            .returning(|_, _, _, _, _| Ok(None));
        let mut inserts = 0;
        tokens.expect_insert().times(2).returning(move |_| {
            inserts += 1;
            Ok(if inserts == 1 {
                TokenWrite::DuplicateFingerprint
            } else {
                TokenWrite::Done
            })
        });
        tokens.expect_delete_expired().times(1).returning(|_| Ok(1));
        let vault = token_vault(tokens);
        let settings = TenantSettings {
            fingerprint_tokens: false,
            deduplicate_tokens: true,
        };
        let who = caller(&[Permission::TokenCreate], vec![], settings);
        let (_, created) = vault
            .create_token(&who, raw("card_number", json!("4242424242424242")))
            .await
            .unwrap();
        assert!(created);
    }

    /// A report must see every activity recorded before it started, even while the background
    /// flush has drained the buffer and is still writing (docs/decisions.md §10). The write is
    /// made slow by holding the fake repository until the test lets it go; no timing involved.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_report_waits_for_the_flush_in_flight() {
        use futures_util::FutureExt as _;
        use std::sync::atomic::{AtomicU64, Ordering};
        let written = Arc::new(AtomicU64::new(0));
        let (entered_tx, entered_rx) = tokio::sync::oneshot::channel::<()>();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let entered_tx = std::sync::Mutex::new(Some(entered_tx));
        let go_rx = std::sync::Mutex::new(go_rx);
        let mut tokens = MockTokens::new();
        tokens
            .expect_get()
            .returning(|_, id, _| Ok(Some(stored(id, "/pci/high/", &json!("4242424242424242")))));
        let w = written.clone();
        tokens.expect_record_activity().returning(move |entries| {
            if let Some(tx) = entered_tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
            go_rx.lock().unwrap().recv().unwrap();
            w.fetch_add(entries.len() as u64, Ordering::SeqCst);
            Ok(())
        });
        let w = written.clone();
        tokens
            .expect_count_active()
            .returning(move |_, _| Ok(w.load(Ordering::SeqCst)));
        tokens.expect_count_by_type().returning(|_, _| Ok(vec![]));
        let vault = token_vault(tokens);
        let who = caller(
            &[Permission::TokenRead, Permission::ReportRead],
            vec![],
            TenantSettings::default(),
        );
        vault.get_token(&who, "t-1").await.unwrap();
        let background = tokio::spawn({
            let vault = vault.clone();
            async move { vault.flush_activity().await }
        });
        entered_rx.await.unwrap(); // the background flush has drained the buffer and is writing
        let mut report = Box::pin(vault.usage_report(&who));
        assert!(
            (&mut report).now_or_never().is_none(),
            "the report waits for the flush in flight"
        );
        go_tx.send(()).unwrap();
        assert_eq!(background.await.unwrap().unwrap(), 1);
        assert_eq!(report.await.unwrap().monthly_active_tokens, 1);
    }

    #[tokio::test]
    async fn reads_apply_the_deciding_rule() {
        let mut tokens = MockTokens::new();
        tokens
            .expect_get()
            .returning(|_, id, _| Ok(Some(stored(id, "/pci/high/", &json!("4242424242424242")))));
        let vault = token_vault(tokens);
        let reveal = caller(
            &[Permission::TokenRead],
            vec![rule("/pci/", Transform::Reveal, &[Permission::TokenRead])],
            TenantSettings::default(),
        );
        assert_eq!(
            vault.get_token(&reveal, "t").await.unwrap().shown,
            Some(json!("4242424242424242"))
        );
        let redact = caller(
            &[Permission::TokenRead],
            vec![rule("/", Transform::Redact, &[Permission::TokenRead])],
            TenantSettings::default(),
        );
        assert_eq!(vault.get_token(&redact, "t").await.unwrap().shown, None);
        let elsewhere = caller(
            &[],
            vec![rule("/bank/", Transform::Reveal, &[Permission::TokenRead])],
            TenantSettings::default(),
        );
        assert!(matches!(
            vault.get_token(&elsewhere, "t").await,
            Err(Error::Forbidden)
        ));
    }

    #[tokio::test]
    async fn lists_push_visibility_into_the_query() {
        let mut tokens = MockTokens::new();
        tokens
            .expect_list()
            .withf(|_, f, _, _| f.visibility == Visibility::Prefixes(vec!["/pci/".into()]))
            .times(1)
            .returning(|_, _, page, _| {
                Ok(Page {
                    items: vec![],
                    total_items: 0,
                    request: page,
                })
            });
        let vault = token_vault(tokens);
        let who = caller(
            &[],
            vec![rule("/pci/", Transform::Mask, &[Permission::TokenRead])],
            TenantSettings::default(),
        );
        let filter = TokenFilter {
            ids: vec![],
            types: vec![],
            metadata: vec![],
            visibility: Visibility::All,
            parent: None,
        };
        let page = vault
            .list_tokens(&who, filter, PageRequest::default())
            .await
            .unwrap();
        assert_eq!(page.total_items, 0);
    }

    #[tokio::test]
    async fn detokenize_refuses_more_than_a_hundred_tokens_without_reading() {
        let mut tokens = MockTokens::new();
        tokens.expect_get_many().never();
        let vault = token_vault(tokens);
        let who = caller(&[Permission::TokenRead], vec![], TenantSettings::default());
        let body = json!(
            (0..101)
                .map(|i| format!("{{{{ token-{i} }}}}"))
                .collect::<Vec<_>>()
        );
        assert!(matches!(
            vault.detokenize(&who, body).await,
            Err(Error::Validation(_))
        ));
    }
}
