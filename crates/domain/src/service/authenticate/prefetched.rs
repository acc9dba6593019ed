//! What an authentication read beside the caller's key, in the same round trip: handed to the
//! use case, which looks at it only after checking the caller.

use uuid::Uuid;

use crate::formula::Formula;
use crate::ports::SearchCondition;
use crate::reactor::Reactor;
use crate::service::tokens::ReadAhead;
use crate::token::StoredToken;

/// What was read in the same round trip as the caller's key, for one resource `id` of the
/// key's tenant: a token ([`Authenticator::authenticate_reading`](crate::service::Authenticator::authenticate_reading)) or a reactor with its formula
/// ([`Authenticator::authenticate_reacting`](crate::service::Authenticator::authenticate_reacting)). Nothing of it is looked at before the use case has
/// checked the caller, and it only stands for the tenant and id it was read for.
#[derive(Debug)]
pub struct Prefetched<K, T> {
    tenant_id: Uuid,
    id: K,
    read: T,
}

/// A token read with the key (`None` inside: the tenant has no live token by that id).
pub type PrefetchedToken = Prefetched<String, Option<StoredToken>>;

/// A reactor and its formula read with the key, with the token its arguments name.
pub type PrefetchedReactor = Prefetched<Uuid, ReactorRead>;

/// A search's query made the store's condition, and the tokens it matched when they were read
/// with the key, for the query's text
/// ([`Authenticator::authenticate_searching`](crate::service::Authenticator::authenticate_searching)).
pub type PrefetchedSearch = Prefetched<String, SearchRead>;

/// What [`Authenticator::authenticate_searching`](crate::service::Authenticator::authenticate_searching)
/// made of a query beside the key.
#[derive(Debug)]
pub struct SearchRead {
    /// The query's condition, its values hashed for the tenant.
    pub(in crate::service) condition: SearchCondition,
    /// Every live match of the tenant, newest first, before the caller's visibility (`None`:
    /// not read with the key).
    pub(in crate::service) rows: Option<Vec<StoredToken>>,
}

/// What [`Authenticator::authenticate_reacting`](crate::service::Authenticator::authenticate_reacting)
/// read beside the key.
#[derive(Debug)]
pub struct ReactorRead {
    /// The reactor and its formula (`None`: the tenant has no such reactor; a formula `None`:
    /// the reactor's formula is missing).
    pub(in crate::service) reactor: Option<(Reactor, Option<Formula>)>,
    /// The token the arguments name, read for the key's tenant (`None`: not read here).
    pub(in crate::service) tokens: Option<ReadAhead>,
}

impl<K, T> Prefetched<K, T> {
    /// What was read for `tenant_id` and `id`: made by the authentication alone.
    pub(super) fn new(tenant_id: Uuid, id: K, read: T) -> Self {
        Self {
            tenant_id,
            id,
            read,
        }
    }

    /// What was read, when it was read for this tenant and id (otherwise the use case reads
    /// again).
    pub(in crate::service) fn read_for<Q>(self, tenant_id: Uuid, id: &Q) -> Option<T>
    where
        K: std::borrow::Borrow<Q>,
        Q: PartialEq + ?Sized,
    {
        (self.tenant_id == tenant_id && self.id.borrow() == id).then_some(self.read)
    }
}
