//! `req.svc` for tenant code (docs/decisions.md §7): the token endpoints as method calls, acting
//! as one application, answering with the same JSON (or problem) the HTTP API would. It lives
//! in the inbound adapter because the JSON is this adapter's.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokenvault_domain::Vault;
use tokenvault_domain::auth::Principal;
use tokenvault_domain::ports::code::Svc;
use tokenvault_domain::service::SvcFactory;
use tokenvault_domain::token::RawTokenPatch;
use tokenvault_domain::token_new::RawNewToken;

use crate::dto::Paginated;
use crate::limit::RateLimit;
use crate::problem::ApiError;
use crate::routes::tokens::{TokenResponse, filter_from_query, tokenized_json};

/// Makes a [`Svc`] per application.
#[derive(Clone, Debug)]
pub struct HttpSvcFactory {
    limit: Arc<RateLimit>,
}

impl HttpSvcFactory {
    /// `req.svc` calls count against `limit`, the server's own per-application rate limit
    /// (docs/decisions.md §11): code cannot make more calls than its application could.
    pub fn new(limit: Arc<RateLimit>) -> Self {
        Self { limit }
    }
}

impl SvcFactory for HttpSvcFactory {
    fn for_application(&self, vault: Vault, principal: Principal) -> Arc<dyn Svc> {
        Arc::new(ApplicationSvc {
            vault,
            principal,
            limit: self.limit.clone(),
        })
    }
}

struct ApplicationSvc {
    vault: Vault,
    principal: Principal,
    limit: Arc<RateLimit>,
}

fn arg(args: &[Value], i: usize) -> Value {
    args.get(i).cloned().unwrap_or(Value::Null)
}

fn id_arg(args: &[Value]) -> Result<String, ApiError> {
    match args.first() {
        Some(Value::String(id)) => Ok(id.clone()),
        _ => Err(ApiError::invalid("id", "must be a string")),
    }
}

fn object(value: Value, field: &str) -> Result<serde_json::Map<String, Value>, ApiError> {
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(ApiError::invalid(field, "must be an object")),
    }
}

fn json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

impl ApplicationSvc {
    async fn dispatch(&self, method: &str, args: &[Value]) -> Result<Value, ApiError> {
        let (vault, me) = (&self.vault, &self.principal);
        match method {
            "tokens.create" => {
                let raw = RawNewToken::from_object(&object(arg(args, 0), "body")?)
                    .map_err(|e| ApiError::validation(&e))?;
                let (view, _) = vault.tokens.create_token(me, raw).await?;
                Ok(json(&TokenResponse::from(view)))
            }
            "tokens.retrieve" => {
                let view = vault.tokens.get_token(me, &id_arg(args)?).await?;
                Ok(json(&TokenResponse::from(view)))
            }
            "tokens.update" => {
                let id = id_arg(args)?;
                let map = object(arg(args, 1), "patch")?;
                let patch = RawTokenPatch::from_object(&map);
                let view = vault.tokens.update_token(me, &id, patch).await?;
                Ok(json(&TokenResponse::from(view)))
            }
            "tokens.delete" => {
                vault.tokens.delete_token(me, &id_arg(args)?).await?;
                Ok(Value::Null)
            }
            "tokens.list" => {
                let query = object(arg(args, 0), "query")?;
                let (filter, page) = filter_from_query(&query)?;
                let page = vault.tokens.list_tokens(me, filter, page).await?;
                Ok(json(&Paginated::from_page(page, TokenResponse::from)))
            }
            "tokenize" => {
                let shape = vault.tokens.tokenize(me, arg(args, 0)).await?;
                Ok(tokenized_json(shape))
            }
            "detokenize" => Ok(vault.tokens.detokenize(me, arg(args, 0)).await?),
            _ => Err(ApiError::invalid("method", "is not a svc method")),
        }
    }
}

#[async_trait]
impl Svc for ApplicationSvc {
    async fn call(&self, method: &str, args: Vec<Value>) -> Result<Value, Value> {
        self.limit
            .check(self.principal.application_id)
            .map_err(|e| e.problem_body())?;
        // Its calls record audit entries as requests do, so they wait for room in the
        // tenant's log as requests do (docs/decisions.md §11).
        self.vault
            .auth
            .room(self.principal.tenant_id)
            .await
            .map_err(|e| ApiError::from(e).problem_body())?;
        self.dispatch(method, &args)
            .await
            .map_err(|e| e.problem_body())
    }
}
