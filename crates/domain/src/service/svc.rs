//! `req.svc` (docs/decisions.md §7): tenant code calling the token API as one application,
//! with its permissions and rules and nothing more. Each call counts against the application's
//! rate limit and waits for room in its tenant's audit log, as a request does, then runs the
//! token use case; the JSON at either end is the [`SvcWire`]'s.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::area_error::TokenError;
use crate::auth::Principal;
use crate::ports::code::Svc;
use crate::ports::svc::{SvcAnswer, SvcCall, SvcWire};
use crate::service::Vault;

/// The `req.svc` of one call of code acting as an application.
pub(crate) struct ApplicationSvc {
    vault: Vault,
    principal: Principal,
    wire: Arc<dyn SvcWire>,
}

impl ApplicationSvc {
    /// `req.svc` acting as `principal`.
    pub(crate) fn acting_as(
        vault: Vault,
        principal: Principal,
        wire: Arc<dyn SvcWire>,
    ) -> Arc<dyn Svc> {
        Arc::new(Self {
            vault,
            principal,
            wire,
        })
    }

    async fn run(&self, call: SvcCall) -> Result<SvcAnswer, TokenError> {
        let (tokens, me) = (&self.vault.tokens, &self.principal);
        Ok(match call {
            SvcCall::Create(raw) => {
                SvcAnswer::Token(Box::new(tokens.create_token(me, raw).await?.0))
            }
            SvcCall::Retrieve(id) => SvcAnswer::Token(Box::new(tokens.get_token(me, &id).await?)),
            SvcCall::Update(id, patch) => {
                SvcAnswer::Token(Box::new(tokens.update_token(me, &id, patch).await?))
            }
            SvcCall::Delete(id) => {
                tokens.delete_token(me, &id).await?;
                SvcAnswer::Nothing
            }
            SvcCall::List(filter, page) => {
                SvcAnswer::Tokens(tokens.list_tokens(me, filter, page).await?)
            }
            SvcCall::Tokenize(body) => SvcAnswer::Tokenized(tokens.tokenize(me, body).await?),
            SvcCall::Detokenize(body) => SvcAnswer::Detokenized(tokens.detokenize(me, body).await?),
        })
    }
}

#[async_trait]
impl Svc for ApplicationSvc {
    async fn call(&self, method: &str, args: Vec<Value>) -> Result<Value, Value> {
        self.wire.admit(self.principal.application_id)?;
        // Its calls record audit entries as requests do, so they wait for room in the
        // tenant's log as requests do (docs/decisions.md §11).
        self.vault
            .auth
            .room(self.principal.tenant_id)
            .await
            .map_err(|e| self.wire.problem(e.into()))?;
        let call = self.wire.read(method, &args)?;
        match self.run(call).await {
            Ok(answer) => Ok(self.wire.write(answer)),
            Err(e) => Err(self.wire.problem(e)),
        }
    }
}
