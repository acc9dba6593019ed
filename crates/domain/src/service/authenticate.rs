//! Authentication: an API key to the calling [`Principal`].

use uuid::Uuid;

use super::Vault;
use super::sessions::session_principal;
use crate::application::{ApiKey, KeyHash};
use crate::auth::Principal;
use crate::error::Error;
use crate::reactor::{Formula, Reactor};
use crate::token::StoredToken;

/// A token read in the same round trip as the caller's key ([`Vault::authenticate_reading`]),
/// for [`Vault::get_token_prefetched`]. It only stands for the tenant and id it was read for.
#[derive(Debug)]
pub struct Prefetched {
    tenant_id: Uuid,
    id: String,
    token: Option<StoredToken>,
}

impl Prefetched {
    /// Whether it was read for this tenant and id (otherwise the token is read again).
    pub(super) fn stands_for(&self, tenant_id: Uuid, id: &str) -> bool {
        self.tenant_id == tenant_id && self.id == id
    }

    /// The row read (`None`: the tenant has no live token by that id).
    pub(super) fn into_row(self) -> Option<StoredToken> {
        self.token
    }
}

/// A reactor and its formula read in the same round trip as the caller's key
/// ([`Vault::authenticate_reacting`]), for [`Vault::react`]. It only stands for the tenant and
/// id it was read for.
#[derive(Debug)]
pub struct PrefetchedReactor {
    tenant_id: Uuid,
    id: Uuid,
    reactor: Option<(Reactor, Option<Formula>)>,
}

impl PrefetchedReactor {
    /// Whether it was read for this tenant and id (otherwise the reactor is read again).
    pub(super) fn stands_for(&self, tenant_id: Uuid, id: Uuid) -> bool {
        self.tenant_id == tenant_id && self.id == id
    }

    /// What was read (`None`: the tenant has no reactor by that id).
    pub(super) fn into_read(self) -> Option<(Reactor, Option<Formula>)> {
        self.reactor
    }
}

impl Vault {
    /// Resolves an API key to its application, or to its session (docs/decisions.md §4,
    /// sessions). Missing, malformed, unknown and expired keys, a session not yet authorized and
    /// a session whose authorizer has expired are all `Unauthenticated`.
    pub async fn authenticate(&self, key: Option<&str>) -> Result<Principal, Error> {
        self.authenticate_hash(&self.key_hash(key)?).await
    }

    /// [`Self::authenticate`] of a key already hashed ([`Self::key_hash`]).
    pub(super) async fn authenticate_hash(&self, hash: &KeyHash) -> Result<Principal, Error> {
        let now = self.ports.clock.now();
        if let Some((app, settings)) = self.ports.applications.find_by_key_hash(hash).await? {
            if app.is_expired(now) {
                return Err(Error::Unauthenticated);
            }
            return Ok(Principal::of_application(app, settings));
        }
        self.authenticate_session(hash).await
    }

    /// [`Self::authenticate`] and, for an application's key, its tenant's token `token_id` read
    /// in the same round trip. Nothing of the token is looked at here: the caller's permission
    /// and rules decide in [`Self::get_token_prefetched`], as for any read.
    pub async fn authenticate_reading(
        &self,
        key: Option<&str>,
        token_id: &str,
    ) -> Result<(Principal, Option<Prefetched>), Error> {
        if !super::tokens::may_be_stored(token_id) {
            // No such token: authenticate alone; the read answers 404.
            return Ok((self.authenticate(key).await?, None));
        }
        let hash = self.key_hash(key)?;
        let now = self.ports.clock.now();
        if let Some(found) = self
            .ports
            .applications
            .find_by_key_hash_with_token(&hash, token_id, now)
            .await?
        {
            if found.application.is_expired(now) {
                return Err(Error::Unauthenticated);
            }
            let prefetched = Prefetched {
                tenant_id: found.application.tenant_id,
                id: token_id.to_owned(),
                token: found.token,
            };
            let principal = Principal::of_application(found.application, found.settings);
            return Ok((principal, Some(prefetched)));
        }
        Ok((self.authenticate_session(&hash).await?, None))
    }

    /// [`Self::authenticate`] and, for an application's key, its tenant's reactor
    /// `reactor_id` with its formula read in the same round trip. Nothing read is looked at
    /// here: [`Self::react`] checks the caller first, as without it.
    pub async fn authenticate_reacting(
        &self,
        key: Option<&str>,
        reactor_id: Uuid,
    ) -> Result<(Principal, Option<PrefetchedReactor>), Error> {
        let hash = self.key_hash(key)?;
        let now = self.ports.clock.now();
        if let Some(found) = self
            .ports
            .applications
            .find_by_key_hash_with_reactor(&hash, reactor_id)
            .await?
        {
            if found.application.is_expired(now) {
                return Err(Error::Unauthenticated);
            }
            let prefetched = PrefetchedReactor {
                tenant_id: found.application.tenant_id,
                id: reactor_id,
                reactor: found.reactor,
            };
            let principal = Principal::of_application(found.application, found.settings);
            return Ok((principal, Some(prefetched)));
        }
        Ok((self.authenticate_session(&hash).await?, None))
    }

    /// The hash of a well-formed key; `Unauthenticated` for a missing or malformed one.
    pub(super) fn key_hash(&self, key: Option<&str>) -> Result<KeyHash, Error> {
        let key = key.and_then(ApiKey::parse).ok_or(Error::Unauthenticated)?;
        Ok(self.ports.keys.hash(&key))
    }

    async fn authenticate_session(&self, hash: &KeyHash) -> Result<Principal, Error> {
        let now = self.ports.clock.now();
        let found = self
            .ports
            .sessions
            .find_by_key_hash(hash, now)
            .await?
            .ok_or(Error::Unauthenticated)?;
        if found.authorizer.is_expired(now) {
            return Err(Error::Unauthenticated);
        }
        Ok(session_principal(found))
    }
}
