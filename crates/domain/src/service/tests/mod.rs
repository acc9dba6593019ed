//! Use-case tests: mockall mocks of the ports whose calls a test asserts (tenant keys,
//! applications, tokens, usage, cipher, expressions, code, API keys, sessions), and small
//! stand-ins for the others (`NoSvc`, `NoFormulas`, `NoReactors`, `NoProxies`,
//! `NoIdempotency`, `NoAudit` keeping the log in memory, `NoForwarder`, `FixedClock`). The
//! helpers are here, the tests in one file per use-case area.

use std::sync::Arc;

use async_trait::async_trait;
use mockall::mock;
use mockall::predicate::eq;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{Ports, Vault};
use crate::application::{ApiKey, Application, KeyHash, RawApplicationUpdate, RawNewApplication};
use crate::area_error::TokenError;
use crate::audit::{AppendOutcome, AuditEntry, AuditFilter, AuditHead};
use crate::auth::Principal;
use crate::error::{Error, RepoError};
use crate::formula::Formula;
use crate::page::{Page, PageRequest};
use crate::permission::{ApplicationType, Permission};
use crate::ports::code::{CodeCall, CodeError, CodeRunner};
use crate::ports::forward::{ForwardError, Forwarder, OutboundRequest, OutboundResponse};
use crate::ports::svc::{SvcAnswer, SvcCall, SvcWire};
use crate::ports::{
    AlsoRead, ApplicationRepository, AuditRepository, AuthorizedSession, Beside, Cipher,
    CipherError, Claim, Clock, Expressions, FormulaDelete, FormulaRepository, IdempotencyKey,
    IdempotencyRepository, KeyRead, KeyService, ProxyRepository, ReactorRepository, RenderError,
    SearchCondition, SessionRepository, StoredProxy, TenantKeys, TenantRepository, TokenFilter,
    TokenRepository, TokenWrite, TypeCount, UsageRepository, Visibility,
};
use crate::proxy::ProxyKey;
use crate::reactor::Reactor;
use crate::session::{Nonce, Session, SessionGrant};
use crate::tenant::{RawTenantUpdate, Tenant, TenantSettings};
use crate::token::StoredToken;

mock! {
    Tenants {}
    #[async_trait]
    impl TenantKeys for Tenants {
        async fn data_key(&self, id: Uuid) -> Result<Option<Vec<u8>>, RepoError>;
        async fn data_keys(&self) -> Result<Vec<(Uuid, Vec<u8>)>, RepoError>;
        async fn replace_data_key(&self, id: Uuid, old: &[u8], new: &[u8]) -> Result<bool, RepoError>;
        async fn is_live(&self, id: Uuid) -> Result<bool, RepoError>;
    }
    #[async_trait]
    impl TenantRepository for Tenants {
        async fn create_with_application(&self, tenant: &Tenant, wrapped_data_key: &[u8], application: &Application, key_hash: &KeyHash) -> Result<(), RepoError>;
        async fn get(&self, id: Uuid) -> Result<Option<Tenant>, RepoError>;
        async fn update(&self, tenant: &Tenant) -> Result<bool, RepoError>;
        async fn delete(&self, id: Uuid, at: OffsetDateTime) -> Result<bool, RepoError>;
        async fn purge_deleted(&self, batch: u64) -> Result<u64, RepoError>;
        async fn any(&self) -> Result<bool, RepoError>;
        async fn list(&self) -> Result<Vec<Tenant>, RepoError>;
    }
}

mock! {
    Applications {}
    #[async_trait]
    impl ApplicationRepository for Applications {
        async fn insert(&self, application: &Application, key_hash: &KeyHash) -> Result<(), RepoError>;
        async fn find_by_key_hash(&self, hash: &KeyHash) -> Result<Option<(Application, TenantSettings)>, RepoError>;
        async fn find_by_key_hash_also(&self, hash: &KeyHash, also: &AlsoRead, now: OffsetDateTime) -> Result<Option<KeyRead>, RepoError>;
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
        async fn find_by_fingerprint(&self, tenant_id: Uuid, token_type: &str, container: &str, fingerprint: &str, expression: Option<String>, now: OffsetDateTime) -> Result<Option<StoredToken>, RepoError>;
        async fn delete_expired_holders(&self, tenant_id: Uuid, keys: &[(String, String)], now: OffsetDateTime) -> Result<u64, RepoError>;
        async fn update(&self, token: &StoredToken) -> Result<TokenWrite, RepoError>;
        async fn delete(&self, tenant_id: Uuid, id: &str) -> Result<bool, RepoError>;
        async fn list(&self, tenant_id: Uuid, filter: &TokenFilter, page: PageRequest, now: OffsetDateTime) -> Result<Page<StoredToken>, RepoError>;
        async fn search(&self, tenant_id: Uuid, condition: Option<SearchCondition>, visibility: &Visibility, page: PageRequest, now: OffsetDateTime) -> Result<Page<StoredToken>, RepoError>;
        async fn delete_expired(&self, now: OffsetDateTime) -> Result<u64, RepoError>;
        async fn associate(&self, tenant_id: Uuid, parent: &str, child: &str) -> Result<TokenWrite, RepoError>;
        async fn dissociate(&self, tenant_id: Uuid, parent: &str, child: &str) -> Result<bool, RepoError>;
    }
}

mock! {
    pub Usage {}
    #[async_trait]
    impl UsageRepository for Usage {
        async fn count_by_type(&self, tenant_id: Uuid, now: OffsetDateTime) -> Result<Vec<TypeCount>, RepoError>;
        async fn record_activity(&self, entries: &[(Uuid, String, String)]) -> Result<(), RepoError>;
        async fn count_active(&self, tenant_id: Uuid, month: &str) -> Result<u64, RepoError>;
    }
}

mock! {
    pub Ciph {}
    #[async_trait]
    impl Cipher for Ciph {
        async fn new_tenant_key(&self, tenant_id: Uuid) -> Result<Vec<u8>, CipherError>;
        fn has_tenant_key(&self, tenant_id: Uuid) -> bool;
        async fn load_tenant_key(&self, tenant_id: Uuid, wrapped: &[u8]) -> Result<(), CipherError>;
        fn forget_tenant_key(&self, tenant_id: Uuid);
        fn cached_tenant_keys(&self) -> Vec<Uuid>;
        fn encrypt(&self, tenant_id: Uuid, context: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, CipherError>;
        fn decrypt(&self, tenant_id: Uuid, context: &[u8], ciphertext: &[u8]) -> Result<Vec<u8>, CipherError>;
        fn fingerprint(&self, tenant_id: Uuid, input: &[u8]) -> Result<String, CipherError>;
        fn search_term(&self, tenant_id: Uuid, input: &[u8]) -> Result<String, CipherError>;
        async fn rewrap(&self, tenant_id: Uuid, wrapped: &[u8]) -> Result<Option<Vec<u8>>, CipherError>;
    }
}

mock! {
    pub Exprs {}
    impl Expressions for Exprs {
        fn check(&self, expression: &str) -> Result<(), String>;
        fn render_metered(&self, expression: &str, data: &serde_json::Value, steps: &mut u64) -> Result<String, RenderError>;
        fn select(&self, path: &str, data: &serde_json::Value) -> Result<serde_json::Value, String>;
    }
}

/// `req.svc`'s wire for tests that never run code: every call refused.
struct NoSvc;

impl SvcWire for NoSvc {
    fn admit(&self, _: Uuid) -> Result<(), serde_json::Value> {
        Err(serde_json::Value::Null)
    }
    fn read(&self, _: &str, _: &[serde_json::Value]) -> Result<SvcCall, serde_json::Value> {
        Err(serde_json::Value::Null)
    }
    fn write(&self, _: SvcAnswer) -> serde_json::Value {
        serde_json::Value::Null
    }
    fn problem(&self, _: TokenError) -> serde_json::Value {
        serde_json::Value::Null
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
    async fn update(&self, _: &Formula, _: bool) -> Result<bool, RepoError> {
        Ok(false)
    }
    async fn lent(&self, _: Uuid, _: Uuid) -> Result<bool, RepoError> {
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
        async fn run(&self, call: CodeCall) -> Result<serde_json::Value, CodeError>;
        async fn compiles(&self, tenant_id: Uuid, code: &str) -> Result<bool, CodeError>;
    }
}

mock! {
    Keys {}
    impl KeyService for Keys {
        fn generate(&self) -> ApiKey;
        fn hash(&self, key: &ApiKey) -> KeyHash;
        fn generate_proxy_key(&self) -> ProxyKey;
        fn hash_proxy_key(&self, key: &ProxyKey) -> KeyHash;
        fn generate_nonce(&self) -> Nonce;
        fn hash_nonce(&self, nonce: &Nonce) -> KeyHash;
    }
}

mock! {
    pub Sessions {}
    #[async_trait]
    impl SessionRepository for Sessions {
        async fn insert(&self, session: &Session, key_hash: &KeyHash, nonce_hash: &KeyHash) -> Result<(), RepoError>;
        async fn authorize(&self, tenant_id: Uuid, nonce_hash: &KeyHash, authorized_by: Uuid, grant: &SessionGrant, now: OffsetDateTime) -> Result<Option<Uuid>, RepoError>;
        async fn find_by_key_hash(&self, hash: &KeyHash, now: OffsetDateTime) -> Result<Option<AuthorizedSession>, RepoError>;
        async fn delete_for_application(&self, tenant_id: Uuid, application_id: Uuid) -> Result<u64, RepoError>;
        async fn delete_expired(&self, now: OffsetDateTime) -> Result<u64, RepoError>;
    }
}

/// Proxy storage for tests that never reach it: everything is missing.
pub(super) struct NoProxies;

#[async_trait]
impl ProxyRepository for NoProxies {
    async fn insert(&self, _: &StoredProxy) -> Result<(), RepoError> {
        Err(RepoError::Backend("no proxies in this test".into()))
    }
    async fn get(&self, _: Uuid, _: Uuid) -> Result<Option<StoredProxy>, RepoError> {
        Ok(None)
    }
    async fn find_by_key_hash(&self, _: &KeyHash) -> Result<Option<StoredProxy>, RepoError> {
        Ok(None)
    }
    async fn list(
        &self,
        _: Uuid,
        _: &[Uuid],
        _: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<StoredProxy>, RepoError> {
        Ok(Page {
            items: Vec::new(),
            total_items: 0,
            request: page,
        })
    }
    async fn update(&self, _: &StoredProxy) -> Result<bool, RepoError> {
        Ok(false)
    }
    async fn delete(&self, _: Uuid, _: Uuid) -> Result<bool, RepoError> {
        Ok(false)
    }
}

/// Idempotency storage for tests that never reach it.
pub(super) struct NoIdempotency;

#[async_trait]
impl IdempotencyRepository for NoIdempotency {
    async fn claim(
        &self,
        _: &IdempotencyKey,
        _: &[u8],
        _: OffsetDateTime,
        _: OffsetDateTime,
        _: OffsetDateTime,
    ) -> Result<Claim, RepoError> {
        Err(RepoError::Backend("no idempotency in this test".into()))
    }
    async fn delete_expired(&self, _: OffsetDateTime) -> Result<u64, RepoError> {
        Ok(0)
    }
    async fn complete(&self, _: &IdempotencyKey, _: &[u8]) -> Result<(), RepoError> {
        Err(RepoError::Backend("no idempotency in this test".into()))
    }
    async fn release(&self, _: &IdempotencyKey) -> Result<(), RepoError> {
        Err(RepoError::Backend("no idempotency in this test".into()))
    }
}

/// The audit log in memory: entries and heads per tenant, with the repository's compare and
/// swap; tests may edit `entries` to tamper with the log.
#[derive(Default)]
pub(super) struct NoAudit {
    pub(super) entries: std::sync::Mutex<Vec<AuditEntry>>,
    pub(super) heads: std::sync::Mutex<std::collections::HashMap<Uuid, AuditHead>>,
    /// Appends tried.
    pub(super) appends: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl AuditRepository for NoAudit {
    async fn head(&self, tenant_id: Uuid) -> Result<Option<AuditHead>, RepoError> {
        Ok(self.heads.lock().unwrap().get(&tenant_id).cloned())
    }
    async fn append(
        &self,
        tenant_id: Uuid,
        expected: Option<&AuditHead>,
        entries: &[AuditEntry],
    ) -> Result<AppendOutcome, RepoError> {
        self.appends
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut heads = self.heads.lock().unwrap();
        if heads.get(&tenant_id) != expected {
            return Ok(AppendOutcome::HeadMoved);
        }
        // The unique (tenant, seq) index.
        if self
            .entries
            .lock()
            .unwrap()
            .iter()
            .any(|e| e.event.tenant_id == tenant_id && entries.iter().any(|new| new.seq == e.seq))
        {
            return Ok(AppendOutcome::SeqTaken);
        }
        if let Some(last) = entries.last() {
            heads.insert(
                tenant_id,
                AuditHead {
                    seq: last.seq,
                    hash: last.hash.clone(),
                },
            );
        }
        self.entries.lock().unwrap().extend(entries.iter().cloned());
        Ok(AppendOutcome::Appended)
    }
    async fn list(
        &self,
        tenant_id: Uuid,
        _: &AuditFilter,
        page: PageRequest,
    ) -> Result<Page<AuditEntry>, RepoError> {
        let mut items: Vec<AuditEntry> = self
            .entries
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.event.tenant_id == tenant_id)
            .cloned()
            .collect();
        items.reverse();
        Ok(Page {
            total_items: items.len() as u64,
            items,
            request: page,
        })
    }
    async fn chain(
        &self,
        tenant_id: Uuid,
        after: i64,
        limit: u64,
    ) -> Result<Vec<AuditEntry>, RepoError> {
        let mut items: Vec<AuditEntry> = self
            .entries
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.event.tenant_id == tenant_id && e.seq > after)
            .cloned()
            .collect();
        items.sort_by_key(|e| e.seq);
        items.truncate(usize::try_from(limit).unwrap());
        Ok(items)
    }
    async fn tenants(&self) -> Result<Vec<Uuid>, RepoError> {
        let mut all: Vec<Uuid> = self.heads.lock().unwrap().keys().copied().collect();
        all.extend(
            self.entries
                .lock()
                .unwrap()
                .iter()
                .map(|e| e.event.tenant_id),
        );
        all.sort_unstable();
        all.dedup();
        Ok(all)
    }
}

/// A forwarder for tests that never reach it.
pub(super) struct NoForwarder;

#[async_trait]
impl Forwarder for NoForwarder {
    fn check_destination(&self, _: &str) -> Result<(), String> {
        Ok(())
    }
    async fn forward(&self, _: OutboundRequest) -> Result<OutboundResponse, ForwardError> {
        Err(ForwardError::Unreachable(
            "no forwarding in this test".into(),
        ))
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
    fn sleep(&self, duration: std::time::Duration) -> futures_util::future::BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
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

/// A live tenant `id` as its repository returns it.
fn tenant_row(id: Uuid) -> Tenant {
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

fn vault(tenants: MockTenants, applications: MockApplications) -> Vault {
    Vault::new(ports(tenants, applications))
}

fn ports(tenants: MockTenants, applications: MockApplications) -> Ports {
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

fn principal(permissions: &[Permission]) -> Principal {
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

mod applications;
mod audit;
mod idempotency;
mod proxies;
mod reactors;
mod search;
mod sessions;
mod svc;
mod tenants;
mod tokens;
mod usage;
