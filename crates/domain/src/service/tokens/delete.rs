//! `DELETE /tokens/{id}` and the expiry sweep.

use crate::auth::Principal;
use crate::error::Error;
use crate::permission::Permission;
use crate::service::Tokens;

impl Tokens {
    /// `DELETE /tokens/{id}`: the token and its associations.
    pub async fn delete_token(&self, caller: &Principal, id: &str) -> Result<(), Error> {
        caller.require(Permission::TokenDelete)?;
        self.authorize_stored(caller, id, Permission::TokenDelete)
            .await?;
        if self.store.delete(caller.tenant_id, id).await? {
            self.shared.audit(caller, "delete", "token", [id]);
            Ok(())
        } else {
            Err(Error::NotFound)
        }
    }

    /// Background job: deletes expired tokens.
    pub async fn purge_expired_tokens(&self) -> Result<u64, Error> {
        Ok(self.store.delete_expired(self.clock.now()).await?)
    }
}
