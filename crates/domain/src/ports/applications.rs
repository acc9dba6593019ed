//! Storage of applications, and the key lookups that read a tenant's token or reactor in the
//! same round trip.

use async_trait::async_trait;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::application::{Application, KeyHash};
use crate::error::RepoError;
use crate::formula::Formula;
use crate::page::{Page, PageRequest};
use crate::ports::SearchCondition;
use crate::reactor::Reactor;
use crate::tenant::TenantSettings;
use crate::token::StoredToken;

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

    /// What [`Self::find_by_key_hash`] finds and, where the database reads ahead, the live
    /// tokens of `tenant_id` that `condition` matches, newest first, whatever their container
    /// (the caller's visibility is applied by the use case): the path of `POST /tokens/search`
    /// pays one query for authentication and the search. The tokens are read only for a
    /// private application's key of `tenant_id`, and only when at most `limit` match;
    /// otherwise the key alone is read (`tokens: None`).
    async fn find_by_key_hash_with_search(
        &self,
        hash: &KeyHash,
        tenant_id: Uuid,
        condition: &SearchCondition,
        limit: u64,
        now: OffsetDateTime,
    ) -> Result<Option<KeyedSearch>, RepoError>;

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

/// An application found by its key, its tenant's settings and what a search matched.
#[derive(Clone, Debug)]
pub struct KeyedSearch {
    /// The application holding the key.
    pub application: Application,
    /// Its tenant's settings.
    pub settings: TenantSettings,
    /// Every live token of the tenant the condition matched, newest first (`None`: not read,
    /// or more matched than the limit).
    pub tokens: Option<Vec<StoredToken>>,
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
