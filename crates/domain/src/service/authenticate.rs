//! Authentication: an API key to the calling [`Principal`].

use super::Vault;
use super::sessions::session_principal;
use crate::application::ApiKey;
use crate::auth::Principal;
use crate::error::Error;

impl Vault {
    /// Resolves an API key to its application, or to its session (docs/decisions.md §4,
    /// sessions). Missing, malformed, unknown and expired keys, a session not yet authorized and
    /// a session whose authorizer has expired are all `Unauthenticated`.
    pub async fn authenticate(&self, key: Option<&str>) -> Result<Principal, Error> {
        let key = key.and_then(ApiKey::parse).ok_or(Error::Unauthenticated)?;
        let hash = self.ports.keys.hash(&key);
        let now = self.ports.clock.now();
        if let Some((app, settings)) = self.ports.applications.find_by_key_hash(&hash).await? {
            if app.is_expired(now) {
                return Err(Error::Unauthenticated);
            }
            return Ok(Principal::of_application(app, settings));
        }
        let found = self
            .ports
            .sessions
            .find_by_key_hash(&hash, now)
            .await?
            .ok_or(Error::Unauthenticated)?;
        if found.authorizer.is_expired(now) {
            return Err(Error::Unauthenticated);
        }
        Ok(session_principal(found))
    }
}
