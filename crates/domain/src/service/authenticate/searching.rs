//! `POST /tokens/search`'s authentication: the caller's key and, where the database reads
//! ahead, the search itself in the same round trip.
//!
//! A search's `data` and `metadata` values are hashed under the tenant's search key before
//! storage sees them, and the tenant is known only once the key is read. So the tenant of each
//! application key that authenticated here is remembered (`key_tenants.rs`): the next search
//! with that key hashes its terms for that tenant and reads them with the key. The memory is
//! a guess that is checked, never trusted: the statement reads the key's application afresh
//! and reads tokens only for its own tenant (a key never changes tenant; a deleted or
//! replaced key finds nothing and is refused as before).
//!
//! The tokens are read before the caller's visibility is applied (it is decided from the
//! application the same statement reads), so the use case filters them
//! ([`super::super::Tokens::search_tokens`]); at most [`READ_AHEAD`] are read, and a search that
//! matches more is read again with the visibility in the query.

use super::prefetched::{PrefetchedSearch, SearchRead};
use crate::auth::Principal;
use crate::error::Error;
use crate::permission::Permission;
use crate::ports::{AlsoRead, Beside, SearchAhead};
use crate::service::{Authenticator, Tokens};

/// Matches read with the key at most.
pub(in crate::service) const READ_AHEAD: u64 = 100;

impl Authenticator {
    /// [`Self::authenticate`] and, for an application's key that searched before, `query`
    /// made the store's condition for its tenant and, where the database reads ahead, the
    /// tokens it matches, read in the same round trip. Nothing read is looked at here: [`Tokens::search_tokens`] checks the caller first, as without it, and applies the
    /// caller's visibility.
    pub async fn authenticate_searching(
        &self,
        key: Option<&str>,
        tokens: &Tokens,
        query: Option<&str>,
    ) -> Result<(Principal, Option<PrefetchedSearch>), Error> {
        let hash = self.key_hash(key)?;
        let ahead = match (self.key_tenants.get(&hash), query) {
            (Some(tenant_id), Some(query)) => tokens
                .read_ahead_condition(tenant_id, query)
                .await
                .map(|condition| (tenant_id, query, condition)),
            _ => None,
        };
        let Some((tenant_id, query, condition)) = ahead else {
            let principal = self.authenticate_hash(&hash).await?;
            // Only a key that may search reads ahead: any other would make the server read a
            // tenant's matches before it is refused (attack review of e57d89c).
            if principal.session.is_none() && principal.require(Permission::TokenSearch).is_ok() {
                self.key_tenants.remember(hash, principal.tenant_id);
            }
            return Ok((principal, None));
        };
        let also = AlsoRead {
            search: Some(SearchAhead {
                tenant_id,
                condition,
                limit: READ_AHEAD,
            }),
            ..AlsoRead::default()
        };
        let found = self
            .applications
            .find_by_key_hash_also(&hash, &also, self.clock.now())
            .await?;
        let (Some(found), Some(ahead)) = (found, also.search) else {
            return Ok((self.authenticate_session(&hash).await?, None));
        };
        if found.application.tenant_id != tenant_id {
            // The key is another tenant's now (a bootstrap key given to a new tenant): the
            // condition was hashed for the old one, so nothing of it is used.
            self.key_tenants.remember(hash, found.application.tenant_id);
            let (principal, _) =
                self.keyed::<(), ()>(found.application, found.settings, (), Beside::NotRead)?;
            return Ok((principal, None));
        }
        let read = SearchRead {
            condition: ahead.condition,
            rows: found.matches.read(),
        };
        self.keyed(
            found.application,
            found.settings,
            query.to_owned(),
            Beside::Read(read),
        )
    }
}
