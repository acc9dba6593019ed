//! Authentication: an API key to the calling [`Principal`].

pub(super) mod key_tenants;
pub(super) mod prefetched;
pub(super) mod searching;

use uuid::Uuid;

use self::prefetched::{Prefetched, PrefetchedReactor, PrefetchedToken, ReactorRead};
use super::Authenticator;
use super::sessions::session_principal;
use serde_json::Value;

use crate::application::{ApiKey, Application, KeyHash};
use crate::auth::Principal;
use crate::error::Error;
use crate::permission::ApplicationType;
use crate::ports::{AlsoRead, Beside};

use crate::service::tokens::ReadAhead;
use crate::tenant::TenantSettings;

impl Authenticator {
    /// Resolves an API key to its application, or to its session (docs/decisions.md §4,
    /// sessions). Missing, malformed, unknown and expired keys, a session not yet authorized and
    /// a session whose authorizer has expired are all `Unauthenticated`.
    pub async fn authenticate(&self, key: Option<&str>) -> Result<Principal, Error> {
        self.authenticate_hash(&self.key_hash(key)?).await
    }

    /// Once a request's caller is known and admitted (its key, its application's rate limit),
    /// and before anything of it runs: waits while the tenant's audit log is behind
    /// (`audit/room.rs`), `Overloaded` if it stays so. Every request calls it once: the inbound
    /// adapter for a keyed caller, [`super::Proxies::invoke_proxy`] for a proxy's tenant.
    pub async fn room(&self, tenant_id: Uuid) -> Result<(), Error> {
        self.audit.room(tenant_id, &*self.clock).await
    }

    /// [`Self::authenticate`] of a key already hashed ([`Self::key_hash`]).
    pub(super) async fn authenticate_hash(&self, hash: &KeyHash) -> Result<Principal, Error> {
        let now = self.clock.now();
        if let Some((app, settings)) = self.applications.find_by_key_hash(hash).await? {
            if app.is_expired(now) {
                return Err(Error::Unauthenticated);
            }
            return Ok(Principal::of_application(app, settings));
        }
        self.authenticate_session(hash).await
    }

    /// [`Self::authenticate`] and, for an application's key, its tenant's token `token_id` read
    /// in the same round trip. Nothing of the token is looked at here: the caller's permission
    /// and rules decide in [`super::Tokens::get_token_prefetched`], as for any read.
    pub async fn authenticate_reading(
        &self,
        key: Option<&str>,
        token_id: &str,
    ) -> Result<(Principal, Option<PrefetchedToken>), Error> {
        if !super::tokens::may_be_stored(token_id) {
            // No such token: authenticate alone; the read answers 404.
            return Ok((self.authenticate(key).await?, None));
        }
        let hash = self.key_hash(key)?;
        let also = AlsoRead {
            token: Some(token_id.to_owned()),
            ..AlsoRead::default()
        };
        match self
            .applications
            .find_by_key_hash_also(&hash, &also, self.clock.now())
            .await?
        {
            Some(found) => self.keyed(
                found.application,
                found.settings,
                token_id.to_owned(),
                found.token,
            ),
            None => Ok((self.authenticate_session(&hash).await?, None)),
        }
    }

    /// [`Self::authenticate`] and, for an application's key, its tenant's reactor
    /// `reactor_id` with its formula read in the same round trip, and with them the token
    /// `args` names when it names exactly one (a reactor's usual call: one card). Nothing read
    /// is looked at here: [`super::Reactors::react`] checks the caller first, as without it,
    /// and authorizes the token as any detokenization does.
    pub async fn authenticate_reacting(
        &self,
        key: Option<&str>,
        reactor_id: Uuid,
        args: Option<&Value>,
    ) -> Result<(Principal, Option<PrefetchedReactor>), Error> {
        let hash = self.key_hash(key)?;
        // The id the reactor's arguments name, as the detokenization will find it.
        let wanted = args
            .map(|args| super::tokens::wanted_ids(args, false))
            .filter(|ids| ids.len() == 1 && super::tokens::may_be_stored(&ids[0]));
        let also = AlsoRead {
            token: wanted.as_ref().map(|ids| ids[0].clone()),
            reactor: Some(reactor_id),
            search: None,
        };
        let Some(found) = self
            .applications
            .find_by_key_hash_also(&hash, &also, self.clock.now())
            .await?
        else {
            return Ok((self.authenticate_session(&hash).await?, None));
        };
        // Only a private application's key reads a token (decisions §4); for any other the
        // detokenization reads, and answers, as usual.
        let tenant_id = found.application.tenant_id;
        let tokens = match (wanted, found.token) {
            (Some(wanted), Beside::Read(token))
                if found.application.app_type == ApplicationType::Private =>
            {
                Some(ReadAhead::new(
                    tenant_id,
                    wanted,
                    token.into_iter().collect(),
                ))
            }
            _ => None,
        };
        let read = match found.reactor {
            Beside::Read(reactor) => Beside::Read(ReactorRead { reactor, tokens }),
            Beside::NotRead => Beside::NotRead,
        };
        self.keyed(found.application, found.settings, reactor_id, read)
    }

    /// The caller of an application's key found with `read` for `id` (when it was read):
    /// refused when the application has expired, as [`Self::authenticate_hash`] refuses it.
    fn keyed<K, T>(
        &self,
        application: Application,
        settings: TenantSettings,
        id: K,
        read: Beside<T>,
    ) -> Result<(Principal, Option<Prefetched<K, T>>), Error> {
        if application.is_expired(self.clock.now()) {
            return Err(Error::Unauthenticated);
        }
        let prefetched = read
            .read()
            .map(|read| Prefetched::new(application.tenant_id, id, read));
        Ok((Principal::of_application(application, settings), prefetched))
    }

    /// The hash of a well-formed key; `Unauthenticated` for a missing or malformed one.
    pub(super) fn key_hash(&self, key: Option<&str>) -> Result<KeyHash, Error> {
        let key = key.and_then(ApiKey::parse).ok_or(Error::Unauthenticated)?;
        Ok(self.keys.hash(&key))
    }

    async fn authenticate_session(&self, hash: &KeyHash) -> Result<Principal, Error> {
        let now = self.clock.now();
        let found = self
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
