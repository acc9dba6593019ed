//! Authentication: an API key to the calling [`Principal`].

use super::Vault;
use crate::application::ApiKey;
use crate::auth::Principal;
use crate::error::Error;

impl Vault {
    /// Resolves an API key to its application. Missing, malformed, unknown and expired keys are
    /// all `Unauthenticated`.
    pub async fn authenticate(&self, key: Option<&str>) -> Result<Principal, Error> {
        let key = key.and_then(ApiKey::parse).ok_or(Error::Unauthenticated)?;
        let hash = self.ports.keys.hash(&key);
        let (app, settings) = self
            .ports
            .applications
            .find_by_key_hash(&hash)
            .await?
            .ok_or(Error::Unauthenticated)?;
        if app.is_expired(self.ports.clock.now()) {
            return Err(Error::Unauthenticated);
        }
        Ok(Principal::of_application(app, settings))
    }
}
