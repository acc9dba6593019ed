//! The mockall mocks of the ports whose calls a test asserts: tenant keys, applications,
//! tokens, usage, cipher, expressions, code, API keys, sessions.

use super::*;

mock! {
    pub Tenants {}
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
    pub Applications {}
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

mock! {
    pub Code {}
    #[async_trait]
    impl CodeRunner for Code {
        async fn run(&self, call: CodeCall) -> Result<serde_json::Value, CodeError>;
        async fn compiles(&self, tenant_id: Uuid, code: &str) -> Result<bool, CodeError>;
    }
}

mock! {
    pub Keys {}
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
