//! Parent/child associations and child tokens.

use super::TokenView;
use crate::area_error::TokenError;
use crate::auth::Principal;
use crate::error::Error;
use crate::permission::Permission;
use crate::ports::TokenWrite;
use crate::service::Tokens;
use crate::token_new::RawNewToken;

impl Tokens {
    /// `POST /tokens/{parent}/children/{child}`: `token:read` on both.
    pub async fn associate(
        &self,
        caller: &Principal,
        parent: &str,
        child: &str,
    ) -> Result<(), TokenError> {
        caller.require(Permission::TokenRead)?;
        for id in [parent, child] {
            self.authorize_stored(caller, id, Permission::TokenRead)
                .await?;
        }
        match self
            .store
            .associate(caller.tenant_id, parent, child)
            .await?
        {
            TokenWrite::Done => {
                self.shared
                    .audit(caller, "associate", "token", [parent, child]);
                Ok(())
            }
            TokenWrite::Missing => Err(Error::NotFound.into()),
            _ => Err(TokenError::AssociationExists),
        }
    }

    /// `DELETE /tokens/{parent}/children/{child}`.
    pub async fn dissociate(
        &self,
        caller: &Principal,
        parent: &str,
        child: &str,
    ) -> Result<(), Error> {
        caller.require(Permission::TokenDelete)?;
        self.authorize_stored(caller, parent, Permission::TokenDelete)
            .await?;
        if self
            .store
            .dissociate(caller.tenant_id, parent, child)
            .await?
        {
            self.shared
                .audit(caller, "dissociate", "token", [parent, child]);
            Ok(())
        } else {
            Err(Error::NotFound)
        }
    }

    /// `POST /tokens/{parent}/children`: `token:create` for the child, `token:read` on the parent.
    pub async fn create_child(
        &self,
        caller: &Principal,
        parent: &str,
        raw: RawNewToken,
    ) -> Result<TokenView, TokenError> {
        caller.require(Permission::TokenCreate)?;
        caller.require(Permission::TokenRead)?;
        self.authorize_stored(caller, parent, Permission::TokenRead)
            .await?;
        let (child, created) = self.create_token(caller, raw).await?;
        if !created {
            // Deduplication returned an existing token: linking it is associating two existing
            // tokens, which needs `token:read` on the child too.
            caller.require_on(child.token.reference(), Permission::TokenRead)?;
        }
        match self
            .store
            .associate(caller.tenant_id, parent, &child.token.id)
            .await?
        {
            TokenWrite::Done => {
                self.shared.audit(
                    caller,
                    "associate",
                    "token",
                    [parent, child.token.id.as_str()],
                );
                Ok(child)
            }
            TokenWrite::DuplicateId => Ok(child),
            TokenWrite::Missing => Err(Error::NotFound.into()),
            TokenWrite::DuplicateFingerprint => {
                Err(Error::internal("unexpected association result").into())
            }
        }
    }
}
