//! Driven ports: what the use cases need from the outside world. Adapters implement them;
//! the domain never names an adapter.
//!
//! Every repository write may also fail with `RepoError::Gone` when a row it refers to is
//! missing (a failed foreign key), besides the `Conflict` and `Backend` each method names.

use async_trait::async_trait;
use time::OffsetDateTime;
use uuid::Uuid;

use serde_json::Value;

use crate::application::{ApiKey, Application, KeyHash};
use crate::error::RepoError;
use crate::page::{Page, PageRequest};
use crate::proxy::ProxyKey;
use crate::reactor::{Formula, Reactor};
use crate::session::Nonce;
use crate::tenant::{Tenant, TenantSettings};
use crate::token::StoredToken;

/// Storage of tenants.
///
/// # Errors
/// `RepoError::Conflict` on a duplicate identifier; `RepoError::Backend` for any storage failure.
#[async_trait]
pub trait TenantRepository: Send + Sync {
    /// Stores a new tenant, its wrapped data key and its first application, atomically.
    async fn create_with_application(
        &self,
        tenant: &Tenant,
        wrapped_data_key: &[u8],
        application: &Application,
        key_hash: &KeyHash,
    ) -> Result<(), RepoError>;

    /// The tenant's data key, wrapped by a master key.
    async fn data_key(&self, id: Uuid) -> Result<Option<Vec<u8>>, RepoError>;

    /// Every tenant's wrapped data key (master key rotation).
    async fn data_keys(&self) -> Result<Vec<(Uuid, Vec<u8>)>, RepoError>;

    /// Replaces a wrapped data key if it is still `old` (an empty `old` means "the tenant has
    /// none yet"); `false` otherwise.
    async fn replace_data_key(&self, id: Uuid, old: &[u8], new: &[u8]) -> Result<bool, RepoError>;

    /// The tenant, if it exists.
    async fn get(&self, id: Uuid) -> Result<Option<Tenant>, RepoError>;

    /// Replaces name, settings and modification fields; `false` when the tenant is gone.
    async fn update(&self, tenant: &Tenant) -> Result<bool, RepoError>;

    /// Deletes the tenant, deleted `at`, in the first of two steps: at once it is gone for
    /// every read, its data key is dropped and its API, session and proxy keys stop working;
    /// its other rows stay until [`Self::purge_deleted`] removes them. `false` when there was
    /// no such tenant.
    async fn delete(&self, id: Uuid, at: OffsetDateTime) -> Result<bool, RepoError>;

    /// The second step of [`Self::delete`]: removes at most `batch` rows of a deleted tenant,
    /// or the deleted tenant itself once nothing of it is left; how many rows went (0 when no
    /// deleted tenant is left, or none of its rows could be taken now: another instance holds
    /// them). Each call is short, so no other tenant waits on it.
    async fn purge_deleted(&self, batch: u64) -> Result<u64, RepoError>;

    /// Whether any tenant exists (first start detection).
    async fn any(&self) -> Result<bool, RepoError>;

    /// Every tenant, oldest first (the operator's `tenants list`).
    async fn list(&self) -> Result<Vec<Tenant>, RepoError>;
}

/// Storage of applications. Every read and write but the key lookup is confined to one tenant.
///
/// # Errors
/// `RepoError::Conflict` when a key hash or id is already taken; `RepoError::Backend` otherwise.
#[async_trait]
pub trait ApplicationRepository: Send + Sync {
    /// Stores a new application with the hash of its key.
    async fn insert(&self, application: &Application, key_hash: &KeyHash) -> Result<(), RepoError>;

    /// The application whose key has this hash, with its tenant's settings (one query).
    async fn find_by_key_hash(
        &self,
        hash: &KeyHash,
    ) -> Result<Option<(Application, TenantSettings)>, RepoError>;

    /// What [`Self::find_by_key_hash`] finds and, in the same round trip, that tenant's live
    /// token `token_id` (`None` when it has none by that id): the read path of
    /// `GET /tokens/{id}` pays one query for authentication and the token.
    async fn find_by_key_hash_with_token(
        &self,
        hash: &KeyHash,
        token_id: &str,
        now: OffsetDateTime,
    ) -> Result<Option<KeyedToken>, RepoError>;

    /// What [`Self::find_by_key_hash`] finds, that tenant's reactor `reactor_id` with its
    /// formula and, given `token_id`, its live token by that id, in one round trip where the
    /// database allows: the read path of `POST /reactors/{id}/react` pays one query for
    /// authentication, the reactor, its code and the token its arguments name. The reactor and
    /// the token are read for a private application's key only.
    async fn find_by_key_hash_with_reactor(
        &self,
        hash: &KeyHash,
        reactor_id: Uuid,
        token_id: Option<String>,
        now: OffsetDateTime,
    ) -> Result<Option<KeyedReactor>, RepoError>;

    /// The application `id` of `tenant_id`.
    async fn get(&self, tenant_id: Uuid, id: Uuid) -> Result<Option<Application>, RepoError>;

    /// A page of the tenant's applications, newest first, optionally only those in `ids`.
    async fn list(
        &self,
        tenant_id: Uuid,
        ids: &[Uuid],
        page: PageRequest,
    ) -> Result<Page<Application>, RepoError>;

    /// Replaces name, permissions, rules and modification fields; `false` when it is gone.
    async fn update(&self, application: &Application) -> Result<bool, RepoError>;

    /// Replaces the key hash (the old key stops working at once); `false` when it is gone.
    async fn replace_key(
        &self,
        application: &Application,
        key_hash: &KeyHash,
    ) -> Result<bool, RepoError>;

    /// Deletes the application; `false` when it did not exist.
    async fn delete(&self, tenant_id: Uuid, id: Uuid) -> Result<bool, RepoError>;

    /// Deletes every application whose `expires_at` is at or before `now`; returns how many.
    async fn delete_expired(&self, now: OffsetDateTime) -> Result<u64, RepoError>;
}

/// An application found by its key, its tenant's settings and one of the tenant's tokens.
#[derive(Clone, Debug)]
pub struct KeyedToken {
    /// The application holding the key.
    pub application: Application,
    /// Its tenant's settings.
    pub settings: TenantSettings,
    /// The tenant's live token by the id asked for, if any.
    pub token: Option<StoredToken>,
}

/// An application found by its key, its tenant's settings and one of the tenant's reactors.
#[derive(Clone, Debug)]
pub struct KeyedReactor {
    /// The application holding the key.
    pub application: Application,
    /// Its tenant's settings.
    pub settings: TenantSettings,
    /// The tenant's reactor by the id asked for, if any, with its formula (`None` when the
    /// formula is missing).
    pub reactor: Option<(Reactor, Option<Formula>)>,
    /// The tenant's live token by the id asked for, if one was asked for and found.
    pub token: Option<StoredToken>,
}

/// Generation and hashing of API keys.
pub trait KeyService: Send + Sync {
    /// A fresh random key.
    fn generate(&self) -> ApiKey;
    /// The digest stored in place of the key; keys are found by it in storage, so no key is
    /// ever compared in process.
    fn hash(&self, key: &ApiKey) -> KeyHash;
    /// A fresh random proxy key.
    fn generate_proxy_key(&self) -> ProxyKey;
    /// The digest a proxy is found by (in a domain of its own: never equal to an API key's).
    fn hash_proxy_key(&self, key: &ProxyKey) -> KeyHash;
    /// A fresh random session nonce.
    fn generate_nonce(&self) -> Nonce;
    /// The digest a nonce is found by (in a domain of its own).
    fn hash_nonce(&self, nonce: &Nonce) -> KeyHash;
}

/// The time and identifiers of new resources.
pub trait Clock: Send + Sync {
    /// Now, in UTC, at microsecond precision (what the databases keep).
    fn now(&self) -> OffsetDateTime;
    /// A new time-ordered identifier.
    fn new_id(&self) -> Uuid;
    /// Ready once `duration` has passed: the bound on a wait (a request waiting for room in its
    /// tenant's audit log).
    fn sleep(&self, duration: std::time::Duration) -> futures_util::future::BoxFuture<'static, ()>;
}

/// What inserting a token found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenWrite {
    /// Stored.
    Done,
    /// Another token of the tenant has this id.
    DuplicateId,
    /// Another token of the tenant has this dedup key.
    DuplicateFingerprint,
    /// No such token (updates).
    Missing,
}

/// Which tokens a list may return.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Visibility {
    /// Every container.
    All,
    /// Only containers under one of these prefixes (none: no token).
    Prefixes(Vec<String>),
    /// Only tokens for which every condition of at least one clause holds (none: no token).
    Conditions(Vec<Vec<crate::access::RuleCondition>>),
    /// Tokens visible under both.
    Both(Box<Visibility>, Box<Visibility>),
    /// Tokens visible under either.
    Either(Box<Visibility>, Box<Visibility>),
}

impl Visibility {
    /// Tokens visible under both `a` and `b` (`All` drops out).
    pub fn both(a: Self, b: Self) -> Self {
        match (a, b) {
            (Self::All, other) | (other, Self::All) => other,
            (a, b) => Self::Both(Box::new(a), Box::new(b)),
        }
    }

    /// Whether the container alone decides, for every container (no session conditions).
    pub fn decided_by_container(&self) -> bool {
        match self {
            Self::All | Self::Prefixes(_) => true,
            Self::Conditions(_) => false,
            Self::Both(a, b) | Self::Either(a, b) => {
                a.decided_by_container() && b.decided_by_container()
            }
        }
    }

    /// Whether every token in `container` is visible; `None` when that depends on more than
    /// the container (session conditions). A prefix covers the containers that start with it,
    /// as the query's `LIKE 'prefix%'` does (containers and prefixes are stored lower-case).
    pub fn admits_container(&self, container: &str) -> Option<bool> {
        match self {
            Self::All => Some(true),
            Self::Prefixes(prefixes) => Some(prefixes.iter().any(|p| container.starts_with(p))),
            Self::Conditions(_) => None,
            Self::Both(a, b) => {
                Some(a.admits_container(container)? && b.admits_container(container)?)
            }
            Self::Either(a, b) => {
                Some(a.admits_container(container)? || b.admits_container(container)?)
            }
        }
    }
}

/// Filters of a token list; every filter is applied in the query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenFilter {
    /// Only these ids (none: all).
    pub ids: Vec<String>,
    /// Only these type names (none: all).
    pub types: Vec<String>,
    /// Exact metadata matches, all required.
    pub metadata: Vec<(String, String)>,
    /// Containers the caller may read.
    pub visibility: Visibility,
    /// Only children of this token.
    pub parent: Option<String>,
}

/// Live tokens of one type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeCount {
    /// Type name.
    pub token_type: String,
    /// Live tokens.
    pub count: u64,
    /// Newest creation.
    pub last_created_at: Option<OffsetDateTime>,
}

/// Storage of tokens and their associations. Expired tokens
/// (`expires_at` at or before `now`) are never returned.
///
/// # Errors
/// `RepoError::Backend` for any storage failure; conflicts are reported in [`TokenWrite`].
#[async_trait]
pub trait TokenRepository: Send + Sync {
    /// Stores a new token.
    async fn insert(&self, token: &StoredToken) -> Result<TokenWrite, RepoError>;

    /// Stores several tokens atomically: all or none (`Done` or a conflict one of them hit; an
    /// adapter may write them in an order of its own, so not necessarily the first given).
    async fn insert_all(&self, tokens: &[StoredToken]) -> Result<TokenWrite, RepoError>;

    /// The live token `id` of the tenant.
    async fn get(
        &self,
        tenant_id: Uuid,
        id: &str,
        now: OffsetDateTime,
    ) -> Result<Option<StoredToken>, RepoError>;

    /// The live tokens among `ids` (one query).
    async fn get_many(
        &self,
        tenant_id: Uuid,
        ids: &[String],
        now: OffsetDateTime,
    ) -> Result<Vec<StoredToken>, RepoError>;

    /// The live token of this type in this container with this fingerprint, made with the
    /// same fingerprint expression (`None`: the type's default), oldest first. Deduplication
    /// never looks into another container (docs/decisions.md §6).
    async fn find_by_fingerprint(
        &self,
        tenant_id: Uuid,
        token_type: &str,
        container: &str,
        fingerprint: &str,
        expression: Option<String>,
        now: OffsetDateTime,
    ) -> Result<Option<StoredToken>, RepoError>;

    /// Replaces every mutable field of the token if its row is still at `token.version` (the
    /// version read), and moves the version on: `Missing` when the token is gone or another
    /// write came first (the caller reads again to tell which).
    async fn update(&self, token: &StoredToken) -> Result<TokenWrite, RepoError>;

    /// Deletes the tenant's expired tokens that hold one of these `(container, dedup key)`
    /// pairs, so that no expired token blocks a write (they are gone at once, decisions §6,
    /// whether the sweep has run or not); returns how many.
    async fn delete_expired_holders(
        &self,
        tenant_id: Uuid,
        keys: &[(String, String)],
        now: OffsetDateTime,
    ) -> Result<u64, RepoError>;

    /// Deletes the token and its associations; `false` when it did not exist.
    async fn delete(&self, tenant_id: Uuid, id: &str) -> Result<bool, RepoError>;

    /// A page of live tokens, newest first.
    async fn list(
        &self,
        tenant_id: Uuid,
        filter: &TokenFilter,
        page: PageRequest,
        now: OffsetDateTime,
    ) -> Result<Page<StoredToken>, RepoError>;

    /// Deletes expired tokens; returns how many.
    async fn delete_expired(&self, now: OffsetDateTime) -> Result<u64, RepoError>;

    /// Links parent → child: `Done`, `DuplicateId` when the link exists, `Missing` when either
    /// token is gone.
    async fn associate(
        &self,
        tenant_id: Uuid,
        parent: &str,
        child: &str,
    ) -> Result<TokenWrite, RepoError>;

    /// Removes a link; `false` when there was none.
    async fn dissociate(
        &self,
        tenant_id: Uuid,
        parent: &str,
        child: &str,
    ) -> Result<bool, RepoError>;
}

/// What the usage report and the operator's tenant summary count: live tokens per type and
/// monthly active tokens, the latter fed by the activity flush. Apart from
/// [`TokenRepository`], so the areas that only count never hold the tokens' storage.
///
/// # Errors
/// `RepoError::Backend` for any storage failure.
#[async_trait]
pub trait UsageRepository: Send + Sync {
    /// Live tokens per type.
    async fn count_by_type(
        &self,
        tenant_id: Uuid,
        now: OffsetDateTime,
    ) -> Result<Vec<TypeCount>, RepoError>;

    /// Records tokens as active in a month ([`month_of`]); one upsert per (tenant, month, token).
    async fn record_activity(&self, entries: &[(Uuid, String, String)]) -> Result<(), RepoError>;

    /// Distinct active tokens of the tenant in the month: the tokens created in it, counted
    /// by the store as they are written (a deleted one keeps its count), and the tokens
    /// recorded by [`Self::record_activity`] in it (the domain records only tokens created in
    /// an earlier month, so none is counted twice).
    async fn count_active(&self, tenant_id: Uuid, month: &str) -> Result<u64, RepoError>;
}

/// Why a cipher operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CipherError {
    /// The tenant's key is not loaded yet.
    #[error("tenant key not loaded")]
    KeyNotLoaded,
    /// Authentication failed or the input is malformed (tampering, wrong key or context).
    #[error("decryption failed")]
    Corrupt,
    /// The wrapped key names a master key that is not configured.
    #[error("unknown master key")]
    UnknownMasterKey,
    /// The key manager holding the master key did not answer, or refused (its reason).
    #[error("key manager: {0}")]
    KeyManager(String),
}

/// The master key, which wraps and unwraps tenant data keys: a local key
/// (`tokenvault-crypto`) or a key manager holding it (Transit, `tokenvault-outbound`), so that
/// in the second case the master key never enters this process. Each wrapped form names the
/// key (and version) that made it.
#[async_trait]
pub trait KeyWrapping: Send + Sync + std::fmt::Debug {
    /// Wraps `key` under the current master key (version), bound to `context`.
    async fn wrap(&self, context: &[u8], key: &[u8]) -> Result<Vec<u8>, CipherError>;

    /// Unwraps what `wrap` made with the same context. [`CipherError::UnknownMasterKey`] when
    /// the wrapped form is not one of this wrapper's keys.
    async fn unwrap(&self, context: &[u8], wrapped: &[u8]) -> Result<Vec<u8>, CipherError>;

    /// Whether `wrapped` is under the current master key (version): rotation leaves it.
    async fn is_current(&self, wrapped: &[u8]) -> Result<bool, CipherError>;
}

/// The UTC calendar month of `t` as the monthly active count keys it (`YYYY-MM`): the month of
/// [`UsageRepository::record_activity`] and [`UsageRepository::count_active`], and the month a
/// store counts a new token in.
pub fn month_of(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!("{:04}-{:02}", t.year(), u8::from(t.month()))
}

/// Envelope encryption of token data: per-tenant data keys wrapped by the master key, cached
/// unwrapped in memory; fingerprints keyed per tenant.
#[async_trait]
pub trait Cipher: Send + Sync {
    /// A new random data key, wrapped under the current master key and bound to the tenant.
    async fn new_tenant_key(&self, tenant_id: Uuid) -> Result<Vec<u8>, CipherError>;
    /// Whether the tenant's key is cached.
    fn has_tenant_key(&self, tenant_id: Uuid) -> bool;
    /// Unwraps and caches the tenant's key.
    async fn load_tenant_key(&self, tenant_id: Uuid, wrapped: &[u8]) -> Result<(), CipherError>;
    /// Drops the tenant's key from the cache.
    fn forget_tenant_key(&self, tenant_id: Uuid);
    /// The tenants whose keys are cached.
    fn cached_tenant_keys(&self) -> Vec<Uuid>;
    /// Encrypts under the tenant's key, bound to `context` (AAD).
    fn encrypt(
        &self,
        tenant_id: Uuid,
        context: &[u8],
        plaintext: &[u8],
    ) -> Result<Vec<u8>, CipherError>;
    /// Decrypts what `encrypt` produced with the same context.
    fn decrypt(
        &self,
        tenant_id: Uuid,
        context: &[u8],
        ciphertext: &[u8],
    ) -> Result<Vec<u8>, CipherError>;
    /// Keyed hash (base58) of `input` under the tenant's fingerprint key.
    fn fingerprint(&self, tenant_id: Uuid, input: &[u8]) -> Result<String, CipherError>;
    /// Re-wraps a wrapped key under the current master key (rotation); `None` if already current.
    async fn rewrap(&self, tenant_id: Uuid, wrapped: &[u8])
    -> Result<Option<Vec<u8>>, CipherError>;
}

/// The work one rendering may do, in the steps the expression engine counts (every value a
/// filter walks, more for sorting; docs/decisions.md §6). The leaves of one mask share it.
pub const RENDER_STEPS: u64 = 500_000;

/// The most a mask stored from now on may cost on its token's data: checked at create and
/// PATCH (400 naming `mask` beyond). A fifth of [`RENDER_STEPS`]: enough to convert the largest
/// token data (1 MiB) and filter it, small enough that a full page fits one response's budget.
pub const MASK_STEPS: u64 = 100_000;

/// The work the expressions of one request may do together: the masks of a response (a page of
/// 100 tokens, a detokenization) and the masks, fingerprints and ids checked or rendered for
/// the tokens one write creates (a tokenize batch). A page of 100 masks of [`MASK_STEPS`] fits,
/// so no mask stored since the cap is ever left out of a page (~0.5 s at most).
pub const RESPONSE_RENDER_STEPS: u64 = 100 * MASK_STEPS;

/// Why an expression could not be rendered on some data.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// The expression fails on this data (a filter refused its input, a missing value, …).
    #[error("{0}")]
    Failed(String),
    /// It would do more work than its step budget allows, or produce more than 1 MiB: refused,
    /// not run to the end.
    #[error("{0}")]
    TooCostly(String),
}

/// The expression language (Liquid with the filters of docs/decisions.md §6).
pub trait Expressions: Send + Sync {
    /// Parses `expression`; the error says why it does not parse.
    fn check(&self, expression: &str) -> Result<(), String>;
    /// Renders `expression` with `data` bound to the variable `data`, doing at most `*steps`
    /// steps of work and taking what it used from `*steps` (so that several renderings can
    /// share one budget).
    fn render_metered(
        &self,
        expression: &str,
        data: &Value,
        steps: &mut u64,
    ) -> Result<String, RenderError>;
    /// Renders `expression` with `data` bound to the variable `data`, within [`RENDER_STEPS`].
    fn render(&self, expression: &str, data: &Value) -> Result<String, RenderError> {
        let mut steps = RENDER_STEPS;
        self.render_metered(expression, data, &mut steps)
    }
    /// What a simple JSONPath (`$.number`, `$.items[0]`) selects in `data`, as JSON: one value,
    /// an array of several, or null for none. Paths that can select a node many times over
    /// (`..`, unions, filters) are refused.
    fn select(&self, path: &str, data: &Value) -> Result<Value, String>;
}

mod audit;
mod idempotency;
mod proxies;
mod reactors;
mod sessions;
mod trails;

pub use audit::AuditRepository;
pub use idempotency::{Claim, IdempotencyKey, IdempotencyRepository};
pub use proxies::{ProxyRepository, StoredProxy};
pub use reactors::{FormulaDelete, FormulaRepository, ReactorRepository};
pub use sessions::{AuthorizedSession, SessionRepository};
pub use trails::{ActivityTrail, AuditTrail};

#[cfg(test)]
mod tests {
    use super::Visibility;
    use crate::access::{ConditionAttribute, ConditionOperator, RuleCondition};

    fn prefixes(p: &[&str]) -> Visibility {
        Visibility::Prefixes(p.iter().map(|s| (*s).to_string()).collect())
    }

    #[test]
    fn a_container_is_admitted_by_prefix_and_undecided_under_conditions() {
        assert_eq!(Visibility::All.admits_container("/x/"), Some(true));
        let pci = prefixes(&["/pci/", "/bank/"]);
        assert_eq!(pci.admits_container("/pci/high/"), Some(true));
        assert_eq!(pci.admits_container("/pcix/"), Some(false));
        assert_eq!(prefixes(&[]).admits_container("/"), Some(false));
        let conditions = Visibility::Conditions(vec![vec![RuleCondition {
            attribute: ConditionAttribute::Container,
            operator: ConditionOperator::Equals,
            value: "/pci/".into(),
        }]]);
        assert_eq!(conditions.admits_container("/pci/"), None);
        assert!(!conditions.decided_by_container());
        assert!(
            Visibility::Either(Box::new(pci.clone()), Box::new(Visibility::All))
                .decided_by_container()
        );
        let both = Visibility::both(prefixes(&["/pci/"]), conditions.clone());
        assert_eq!(
            both.admits_container("/bank/"),
            Some(false),
            "false either way"
        );
        assert_eq!(both.admits_container("/pci/"), None);
        let either = Visibility::Either(Box::new(prefixes(&["/a/"])), Box::new(prefixes(&["/b/"])));
        assert_eq!(either.admits_container("/b/c/"), Some(true));
        assert_eq!(either.admits_container("/c/"), Some(false));
    }
}
