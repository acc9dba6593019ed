//! `POST /reactors/{id}/react`: the eleven invocation rules of the interface (docs/api.md,
//! Reactors; docs/decisions.md §9). `token:use` to invoke and on the container of every token
//! detokenized; `{{ id }}` expressions replaced by token data (complex tokens by their whole
//! object); then the arguments are bound to the declared parameters (undeclared removed,
//! dotted names nested, cast, required ones present); the code runs; its `tokenize` block is
//! tokenized as the reactor's application.

use serde_json::{Value, json};
use uuid::Uuid;

use super::{code_error, raw_and_tokenize};
use crate::area_error::ReactorError;
use crate::auth::Principal;
use crate::error::Error;
use crate::permission::Permission;
use crate::ports::code::{CodeCall, CodeError};
use crate::reactor::{Reactor, bind_arguments};
use crate::service::svc::ApplicationSvc;
use crate::service::tokens::{DetokenizeAs, Tokenized, active};
use crate::service::{PrefetchedReactor, Reactors, Vault};

/// What an invocation returns.
#[derive(Clone, Debug)]
pub struct ReactResult {
    /// `raw` of what the code returned.
    pub raw: Option<Value>,
    /// The tokens made from its `tokenize` block.
    pub tokens: Option<Tokenized>,
}

impl Reactors {
    /// `POST /reactors/{id}/react`; `prefetched`: the reactor read with the caller's key
    /// ([`crate::service::Authenticator::authenticate_reacting`]), used only when it was read
    /// for this tenant and id.
    pub async fn react(
        &self,
        caller: &Principal,
        id: Uuid,
        args: Option<Value>,
        trace_id: Option<String>,
        prefetched: Option<PrefetchedReactor>,
    ) -> Result<ReactResult, ReactorError> {
        caller.require_application()?;
        caller.require(Permission::TokenUse)?;
        let read = prefetched.and_then(|p| p.read_for(caller.tenant_id, &id));
        let (reactor, formula, ahead) = if let Some(read) = read {
            let (reactor, formula) = read.reactor.ok_or(Error::NotFound)?;
            (
                self.opened(reactor).await?,
                formula.ok_or_else(Self::formula_missing)?,
                read.tokens,
            )
        } else {
            let reactor = self.reactor_of(caller, id).await?;
            let formula = self.formula_of(&reactor).await?;
            (reactor, formula, None)
        };
        let args = match args {
            None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
            Some(v @ Value::Object(_)) => v,
            Some(_) => return Err(Error::invalid("args", "must be an object").into()),
        };
        let how = DetokenizeAs {
            permission: Permission::TokenUse,
            field: "args",
            with_filters: false,
        };
        let (args, used) = self
            .tokens
            .detokenize_value(caller, args, how, ahead)
            .await?;
        let bound =
            bind_arguments(&args, &formula.request_parameters).map_err(Error::Validation)?;
        let acting = self.acting_as(caller, &reactor).await?;
        let svc = match acting.clone() {
            Some(principal) => Some(ApplicationSvc::acting_as(
                Vault::upgrade(&self.vault)?,
                principal,
                self.svc.clone(),
            )),
            None => None,
        };
        let request = json!({
            "args": bound,
            "configuration": reactor.configuration,
            "svc": Value::Null,
        });
        let returned = self
            .code
            .run(CodeCall {
                tenant_id: caller.tenant_id,
                code: formula.code,
                request,
                trace_id,
                svc,
                fetch: Some(std::sync::Arc::new(crate::code_fetch::GuardedFetch::new(
                    self.forwarder.clone(),
                ))),
                console: None,
            })
            .await;
        // The code has seen the data unless it never started (every worker busy): recorded
        // whatever it did then, a throw or a limit included.
        if !matches!(returned, Err(CodeError::Busy)) {
            self.shared.record_active(caller.tenant_id, active(&used));
            self.shared
                .audit(caller, "use", "token", used.keys().map(String::as_str));
        }
        let returned = returned.map_err(code_error::<ReactorError>)?;
        let (raw, tokenize) = raw_and_tokenize(returned);
        let tokens = match (tokenize.filter(|t| !t.is_null()), acting) {
            (None, _) => None,
            (Some(block), Some(acting)) => Some(self.tokens.tokenize(&acting, block).await?),
            (Some(_), None) => {
                return Err(Error::invalid(
                    "tokenize",
                    "the reactor has no application to tokenize with",
                )
                .into());
            }
        };
        self.shared
            .audit(caller, "invoke", "reactor", [id.to_string()]);
        Ok(ReactResult { raw, tokens })
    }

    /// The reactor's application as a caller: its permissions and rules, never the caller's
    /// (`svc` and the `tokenize` block act as it). `None` without an application.
    async fn acting_as(
        &self,
        caller: &Principal,
        reactor: &Reactor,
    ) -> Result<Option<Principal>, Error> {
        // An expired application acts no more, even before the sweep deletes it (as for proxies).
        let now = self.clock.now();
        Ok(self
            .application_of(reactor)
            .await?
            .filter(|app| !app.is_expired(now))
            .map(|app| Principal::of_application(app, caller.settings)))
    }
}
