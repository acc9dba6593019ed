//! Invoking a proxy (docs/decisions.md §8): the proxy chosen by its key; `require_auth` needs
//! an API key of the proxy's tenant holding `token:use`; `{{ id }}` and `{{ id | json: '$.p' }}`
//! in the body replaced through the detokenize code path (as the caller, or without auth as
//! the proxy's application); the request transform; the destination; the response transform
//! on 2xx. Every failure of the vault itself is an [`Error`] (the adapter wraps it in
//! `proxy_error`); the destination's own answer, whatever its status, is a [`ProxyReply`].

use crate::audit::ActorType;
use futures_util::future::join;
use serde_json::{Map, Value, json};

use super::super::reactors::code_error;
use crate::area_error::{CodeFailure, DestinationFailure, ProxyError};
use crate::auth::Principal;
use crate::error::Error;
use crate::permission::Permission;
use crate::ports::Beside;
use crate::ports::code::CodeCall;
use crate::ports::forward::{ForwardError, OutboundRequest};
use crate::proxy::{Proxy, ProxyKey, ProxyTail, destination_of, forwardable};
use crate::service::svc::ApplicationSvc;
use crate::service::tokens::{DetokenizeAs, ReadAhead, Used, active};
use crate::service::{Proxies, Vault};
use crate::template::ids_in_text;

/// The most tokens a proxy body may name to have them read with the proxy itself (a body
/// naming more has them read once the caller is known).
const MAX_EARLY_TOKENS: usize = 10;

/// A call to `/proxy/{tail}` as it arrived.
#[derive(Clone)]
pub struct ProxyCall {
    /// `SVC-PROXY-KEY` header or `svc-proxy-key` query parameter.
    pub proxy_key: Option<String>,
    /// `SVC-API-KEY` header.
    pub api_key: Option<String>,
    /// Method, upper case.
    pub method: String,
    /// The path after `/proxy` as the router matched it (may be empty): its `/` are
    /// separators; escapes left in it (`%2F`, `%25`…) are decoded by [`ProxyTail::parse`].
    pub tail: String,
    /// The query without the proxy key, in order.
    pub query: Vec<(String, String)>,
    /// Every header of the request (filtered here).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// Trace id for the code's log lines.
    pub trace_id: Option<String>,
}

impl std::fmt::Debug for ProxyCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyCall")
            .field("method", &self.method)
            .field("body_len", &self.body.len())
            .finish_non_exhaustive()
    }
}

/// The destination's answer (after the response transform).
#[derive(Clone)]
pub struct ProxyReply {
    /// Status to answer with.
    pub status: u16,
    /// What the destination answered (`SVC-PROXY-DESTINATION-STATUS`).
    pub destination_status: u16,
    /// Headers (hop-by-hop ones removed).
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Vec<u8>,
}

impl std::fmt::Debug for ProxyReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyReply")
            .field("status", &self.status)
            .field("body_len", &self.body.len())
            .finish_non_exhaustive()
    }
}

fn is_json(headers: &[(String, String)]) -> bool {
    headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("content-type") && v.to_ascii_lowercase().contains("json")
    })
}

/// The body as transform code sees it: parsed JSON when declared and valid, else text.
fn body_value(body: &[u8], json: bool) -> Value {
    if json && let Ok(v) = serde_json::from_slice(body) {
        return v;
    }
    Value::String(String::from_utf8_lossy(body).into_owned())
}

/// A body value back to bytes: a string as is, anything else as JSON.
fn body_bytes(value: &Value) -> Vec<u8> {
    match value {
        Value::String(s) => s.clone().into_bytes(),
        Value::Null => Vec::new(),
        other => other.to_string().into_bytes(),
    }
}

fn headers_object(headers: &[(String, String)]) -> Value {
    let mut map = Map::new();
    for (name, value) in headers {
        map.insert(name.to_ascii_lowercase(), Value::String(value.clone()));
    }
    Value::Object(map)
}

/// Headers a transform returned (an object of strings), or what is wrong with them.
fn headers_from(value: &Value) -> Result<Vec<(String, String)>, CodeFailure> {
    let Value::Object(map) = value else {
        return Err(transform_error("headers must be an object of strings"));
    };
    map.iter()
        .map(|(name, v)| match v {
            Value::String(s) => Ok((name.clone(), s.clone())),
            Value::Number(n) => Ok((name.clone(), n.to_string())),
            _ => Err(transform_error("headers must be an object of strings")),
        })
        .collect()
}

fn transform_error(detail: &str) -> CodeFailure {
    CodeFailure::Unusable(format!("the transform's result is not usable: {detail}"))
}

fn destination_error(e: ForwardError) -> ProxyError {
    ProxyError::Destination(match e {
        // Why (what a name resolved to) stays in the log: it describes the inside network.
        ForwardError::Refused(why) => {
            tracing::info!(reason = %why, "proxy destination refused");
            DestinationFailure::Refused
        }
        ForwardError::Timeout => DestinationFailure::TimedOut,
        e @ ForwardError::Unreachable(_) => DestinationFailure::Unreachable(e.to_string()),
    })
}

/// A tail that would not stay below the destination's path: 400 naming `path`.
fn tail_error(why: &str) -> Error {
    Error::invalid("path", why)
}

impl Proxies {
    /// Invokes the proxy `call.proxy_key` selects.
    pub async fn invoke_proxy(&self, call: ProxyCall) -> Result<ProxyReply, ProxyError> {
        let Some(raw_key) = call.proxy_key.as_deref() else {
            return Err(Error::invalid(
                "SVC-PROXY-KEY",
                "a proxy key is required (header SVC-PROXY-KEY or query svc-proxy-key)",
            )
            .into());
        };
        let key = ProxyKey::parse(raw_key).ok_or(Error::Unauthenticated)?;
        // The reads run side by side where they do not depend on each other: on PostgreSQL
        // each is a round trip, and a proxy adds what its reads wait for in a row. First the
        // proxy, the caller's key (when the call carries one; looked at only if the proxy
        // requires auth) and the few tokens the body names, read for the proxy's tenant only
        // where they may be used (the repository decides it from the proxy and the caller's
        // key); then, once the caller is known, the proxy's application when it is used, and
        // the tokens when they were not read yet. The body is only scanned for `{{ … }}` here
        // (bounded); it is parsed once the caller is known. A call with a made-up proxy key
        // and API key costs the key's reads beside the proxy's, as any endpoint's
        // authentication does.
        // Binary bodies are never detokenized.
        let text = std::str::from_utf8(&call.body)
            .ok()
            .filter(|text| !text.is_empty());
        let early_ids: Vec<String> = text
            .and_then(|text| ids_in_text(text, true, MAX_EARLY_TOKENS))
            .map(|ids| ids.into_iter().collect())
            .unwrap_or_default();
        let caller_key = call.api_key.as_deref().map(|k| self.auth.key_hash(Some(k)));
        let caller = async {
            match &caller_key {
                Some(Ok(hash)) => Some(self.auth.authenticate_hash(hash).await),
                Some(Err(_)) => Some(Err(Error::Unauthenticated)),
                None => None,
            }
        };
        let (found, caller) = join(
            self.store.find_by_key_hash_also(
                &self.keys.hash_proxy_key(&key),
                caller_key.as_ref().and_then(|hash| hash.as_ref().ok()),
                &early_ids,
                self.clock.now(),
            ),
            caller,
        )
        .await;
        let (stored, early_tokens) = found?.ok_or(Error::Unauthenticated)?;
        let proxy = stored.proxy;
        let caller = if proxy.require_auth {
            let mut caller = caller.unwrap_or(Err(Error::Unauthenticated))?;
            caller.trace_id.clone_from(&call.trace_id);
            if caller.tenant_id != proxy.tenant_id {
                return Err(Error::Unauthenticated.into());
            }
            caller.require_application()?;
            caller.require(Permission::TokenUse)?;
            Some(caller)
        } else if let Some(Err(e)) = caller {
            // A key that is sent must authenticate, whether the proxy requires one or not:
            // the call was counted under it (`routes/proxies.rs`), so an invented key would
            // buy a fresh allowance on every call (attack review, 3948bc8).
            return Err(e.into());
        } else {
            None
        };
        // The call's tenant is the proxy's (a caller's key is of the same tenant): it waits
        // here, once, while that tenant's audit log is behind, as any other request does once
        // admitted (its rate limit was counted by the route).
        self.auth.room(proxy.tenant_id).await?;
        // A bad tail is answered where it always was, but nothing more is read for it.
        let tail = ProxyTail::parse(&call.tail).map_err(tail_error);
        // Whether the body is detokenized, by the caller (`require_auth`) or by the proxy's
        // application.
        let json = is_json(&call.headers);
        let mut parsed = ((proxy.require_auth || proxy.application_id.is_some())
            && tail.is_ok()
            && text.is_some())
        .then(|| body_value(&call.body, json));
        // Relied on only when every id was found: a missing one may not exist, or the tokens
        // may not have been for this caller to read.
        let early = match early_tokens {
            Beside::Read(found) if !early_ids.is_empty() && found.len() == early_ids.len() => {
                Some(ReadAhead::new(proxy.tenant_id, early_ids, found))
            }
            _ => None,
        };
        let ahead = async {
            match (&parsed, early) {
                (Some(value), None) => self.tokens.read_ahead(proxy.tenant_id, value, true).await,
                (_, early) => early,
            }
        };
        // The proxy's application acts when the proxy requires no auth, and lends its rights to
        // the transforms' `svc`; a proxy that requires auth and has no transform never uses it,
        // so it is not read.
        let uses_application = !proxy.require_auth
            || proxy.request_transform.is_some()
            || proxy.response_transform.is_some();
        let application = async {
            if uses_application {
                self.proxy_application(&proxy).await
            } else {
                Ok(None)
            }
        };
        let (application, ahead) = join(application, ahead).await;
        let application = application?;
        let detokenizer = caller.clone().or_else(|| application.clone());
        // Where the call goes, settled before anything is detokenized or run: always on the
        // destination's origin and below its path.
        let url =
            destination_of(&proxy.destination_url, &tail?, &call.query).map_err(tail_error)?;
        // The body goes out byte for byte unless an expression was replaced or a transform
        // rewrote it.
        let mut body: Option<Value> = None;
        let mut used_tokens = Used::new();
        if let Some(acting) = &detokenizer
            && let Some(value) = parsed.take()
        {
            let how = DetokenizeAs {
                permission: Permission::TokenUse,
                field: "body",
                with_filters: true,
            };
            let (replaced, used) = self
                .tokens
                .detokenize_value(acting, value, how, ahead)
                .await?;
            if !used.is_empty() {
                self.shared.record_active(acting.tenant_id, active(&used));
                used_tokens = used;
                body = Some(replaced);
            }
        }
        let mut headers: Vec<(String, String)> = call
            .headers
            .iter()
            .filter(|(n, _)| forwardable(n))
            .cloned()
            .collect();
        // Whether the request went out: a destination that timed out or hung up may still have
        // the data.
        let mut sent = false;
        let outcome = async {
            if let Some(code) = &proxy.request_transform {
                let args = json!({
                    "body": body.take().unwrap_or_else(|| body_value(&call.body, json)),
                    "headers": headers_object(&headers),
                    "method": call.method,
                    "path": call.tail,
                    "query": Value::Object(call.query.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect()),
                });
                let out = self
                    .run_transform(
                        &proxy,
                        code,
                        args,
                        application.clone(),
                        call.trace_id.clone(),
                    )
                    .await?;
                body = Some(out.get("body").cloned().unwrap_or(Value::Null));
                if let Some(h) = out.get("headers").filter(|h| !h.is_null()) {
                    headers = headers_from(h)?
                        .into_iter()
                        .filter(|(n, _)| forwardable(n))
                        .collect();
                }
            }
            let body = match body {
                Some(value) => body_bytes(&value),
                None => call.body,
            };
            sent = true;
            self.forwarder
                .forward(OutboundRequest {
                    method: call.method.clone(),
                    url,
                    headers,
                    body,
                })
                .await
                .map_err(destination_error)
        }
        .await;
        // Recorded once the data left the vault — to the transform or to the destination —
        // whatever became of it then, as who called: the caller's key, or nobody's.
        self.audit_proxy_use(&proxy, caller.as_ref(), &used_tokens, sent);
        let response = outcome?;
        let destination_status = response.status;
        let (Some(code), true) = (
            &proxy.response_transform,
            (200..300).contains(&response.status),
        ) else {
            return Ok(ProxyReply {
                status: response.status,
                destination_status,
                headers: response
                    .headers
                    .into_iter()
                    .filter(|(n, _)| forwardable(n))
                    .collect(),
                body: response.body,
            });
        };
        let args = json!({
            "body": body_value(&response.body, is_json(&response.headers)),
            "headers": headers_object(&response.headers),
            "status": response.status,
        });
        let out = self
            .run_transform(&proxy, code, args, application, call.trace_id)
            .await?;
        let status = match out.get("status") {
            None | Some(Value::Null) => response.status,
            Some(v) => v
                .as_u64()
                .and_then(|s| u16::try_from(s).ok())
                .filter(|s| (200..=599).contains(s) && *s != 204 && *s != 304)
                .ok_or_else(|| transform_error("status must be 200–599 and carry a body"))?,
        };
        let headers = match out.get("headers").filter(|h| !h.is_null()) {
            Some(h) => headers_from(h)?,
            None => response.headers,
        }
        .into_iter()
        .filter(|(n, _)| forwardable(n))
        .collect();
        Ok(ProxyReply {
            status,
            destination_status,
            headers,
            body: body_bytes(out.get("body").unwrap_or(&Value::Null)),
        })
    }

    /// The audit of one call: `invoke` of the proxy when the request was sent, and `use` of each
    /// token handed on. A call without a key is `anonymous`, even when the proxy's application
    /// detokenized for it.
    fn audit_proxy_use(&self, proxy: &Proxy, caller: Option<&Principal>, used: &Used, sent: bool) {
        let proxy_id = proxy.id.to_string();
        if let Some(caller) = caller {
            if sent {
                self.shared.audit(caller, "invoke", "proxy", [proxy_id]);
            }
            self.shared
                .audit(caller, "use", "token", used.keys().map(String::as_str));
            return;
        }
        let anonymous = ActorType::Anonymous;
        if sent {
            self.shared
                .audit_unkeyed(proxy.tenant_id, anonymous, "invoke", "proxy", proxy_id);
        }
        for id in used.keys() {
            self.shared
                .audit_unkeyed(proxy.tenant_id, anonymous, "use", "token", id.clone());
        }
    }

    /// The proxy's application as a principal (what `svc` and unauthenticated
    /// detokenization act as); `None` without one (or when it was deleted since).
    async fn proxy_application(&self, proxy: &Proxy) -> Result<Option<Principal>, Error> {
        let Some(id) = proxy.application_id else {
            return Ok(None);
        };
        let (app, tenant) = join(
            self.applications.get(proxy.tenant_id, id),
            self.tenants.get(proxy.tenant_id),
        )
        .await;
        let Some(app) = app? else {
            return Ok(None);
        };
        // An expired application acts no more, even before the sweep deletes it.
        if app.is_expired(self.clock.now()) {
            return Ok(None);
        }
        let settings = tenant?.ok_or(Error::Unauthenticated)?.settings;
        Ok(Some(Principal::of_application(app, settings)))
    }

    async fn run_transform(
        &self,
        proxy: &Proxy,
        code: &str,
        args: Value,
        application: Option<Principal>,
        trace_id: Option<String>,
    ) -> Result<Value, ProxyError> {
        let svc = match application {
            Some(p) => Some(ApplicationSvc::acting_as(
                Vault::upgrade(&self.vault)?,
                p,
                self.svc.clone(),
            )),
            None => None,
        };
        let configuration = self
            .shared
            .open_proxy_configuration(proxy.tenant_id, proxy.id, proxy.configuration.clone())
            .await?;
        let request = json!({
            "args": args,
            "configuration": configuration.unwrap_or_default(),
            "svc": Value::Null,
        });
        let out = self
            .code
            .run(CodeCall {
                tenant_id: proxy.tenant_id,
                code: code.to_string(),
                request,
                trace_id,
                svc,
                fetch: Some(std::sync::Arc::new(crate::code_fetch::GuardedFetch::new(
                    self.forwarder.clone(),
                ))),
                console: None,
            })
            .await
            .map_err(code_error::<ProxyError>)?;
        if out.is_object() {
            Ok(out)
        } else {
            Err(transform_error("it must return an object with body and headers").into())
        }
    }
}
