//! A key's lookup and what the request will read next, which a database may read in the same
//! round trip ([`ApplicationRepository::find_by_key_hash_also`](super::ApplicationRepository::find_by_key_hash_also)).
//!
//! The use case says what it will need ([`AlsoRead`]); the adapter decides whether reading it
//! beside the key is worth it (a join, a batch) or not at all, and says which it did
//! ([`Beside`]). What was not read, the use case reads itself once the caller is checked, so a
//! database that reads nothing ahead is answered exactly as one that reads everything.

use uuid::Uuid;

use crate::application::Application;
use crate::formula::Formula;
use crate::ports::SearchCondition;
use crate::reactor::Reactor;
use crate::tenant::TenantSettings;
use crate::token::StoredToken;

/// What the request reads after its key, of the key's tenant: hints, never obligations.
#[derive(Clone, Debug, Default)]
pub struct AlsoRead {
    /// A live token by this id.
    pub token: Option<String>,
    /// The reactor by this id, with its formula.
    pub reactor: Option<Uuid>,
    /// The live tokens a search matches.
    pub search: Option<SearchAhead>,
}

/// A search to read beside the key: only for a key of `tenant_id` (the tenant the condition's
/// values were hashed for), and only when at most `limit` tokens match.
#[derive(Clone, Debug)]
pub struct SearchAhead {
    /// The tenant the condition was made for.
    pub tenant_id: Uuid,
    /// The condition, its values hashed for that tenant.
    pub condition: SearchCondition,
    /// Matches read at most.
    pub limit: u64,
}

/// Whether something was read beside the key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Beside<T> {
    /// Not read: the use case reads it itself if it needs it.
    #[default]
    NotRead,
    /// Read for the key's tenant, in the same round trip as the key.
    Read(T),
}

impl<T> Beside<T> {
    /// The value read, if it was.
    pub fn read(self) -> Option<T> {
        match self {
            Self::NotRead => None,
            Self::Read(value) => Some(value),
        }
    }
}

/// An application found by its key, its tenant's settings and what was read beside them.
///
/// Only a private application's key, the only type that may hold `token:read`, `token:use` or
/// `token:search` (decisions §4), makes an adapter read anything beside it: for any other every
/// field but the first two is [`Beside::NotRead`].
#[derive(Clone, Debug)]
pub struct KeyRead {
    /// The application holding the key.
    pub application: Application,
    /// Its tenant's settings.
    pub settings: TenantSettings,
    /// The live token asked for (`Read(None)`: the tenant has none by that id).
    pub token: Beside<Option<StoredToken>>,
    /// The reactor asked for and its formula (`Read(None)`: no such reactor; a formula `None`:
    /// the reactor's formula is missing).
    pub reactor: Beside<Option<(Reactor, Option<Formula>)>>,
    /// Every live token of the tenant the search matched, newest first, before the caller's
    /// visibility (`NotRead` as well when more than the limit matched).
    pub matches: Beside<Vec<StoredToken>>,
}

impl KeyRead {
    /// The key's application and settings, nothing read beside them.
    pub fn alone(application: Application, settings: TenantSettings) -> Self {
        Self {
            application,
            settings,
            token: Beside::NotRead,
            reactor: Beside::NotRead,
            matches: Beside::NotRead,
        }
    }
}
