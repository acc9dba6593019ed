//! One call on a leased worker: the request sent, the worker's `req.svc` calls, `fetch`es and
//! `console` lines answered on the server, and its outcome (or its silence past the deadline)
//! made the domain's answer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokenvault_domain::ports::code::{CodeCall, CodeError, CodeFetch, CodeRunner, Svc};

use super::fetch;
use super::{Broken, Lease, Worker};
use crate::protocol::{FromWorker, Outcome, ToWorker, receive, send};
use crate::{GRACE, QuickJsRunner};

/// The most `console` lines one call writes to the log, and the longest kept.
const MAX_LOG_LINES: usize = 200;
const MAX_LOG_LINE: usize = 4096;

fn outcome(o: Outcome) -> Result<Value, CodeError> {
    match o {
        Outcome::Ok(v) => Ok(v),
        Outcome::Thrown(status, message, errors, line) => Err(CodeError::Thrown {
            status,
            message,
            errors,
            line,
        }),
        Outcome::Custom(status, headers, body) => Err(CodeError::Custom {
            status,
            headers,
            body,
        }),
        Outcome::Limit(why) => Err(CodeError::Limit(why)),
        Outcome::Compile(why) => Err(CodeError::Compile(why)),
        Outcome::Internal(why) => Err(CodeError::Internal(why)),
    }
}

impl QuickJsRunner {
    fn late(&self) -> CodeError {
        CodeError::Limit(format!(
            "the code ran longer than {} ms",
            self.pool.settings.limits.timeout.as_millis()
        ))
    }

    /// A worker for one call of `tenant`, waiting at most `patience` for a free one.
    async fn lease(
        &self,
        tenant: uuid::Uuid,
        patience: Duration,
    ) -> Result<(Lease, tokio::sync::SemaphorePermit<'_>), CodeError> {
        use std::sync::atomic::Ordering;
        let permit = if let Ok(permit) = self.pool.slots.try_acquire() {
            permit
        } else {
            // Bounded: a flood of slow calls is refused (503) instead of queueing for minutes.
            let before = self.pool.waiting.fetch_add(1, Ordering::SeqCst);
            let waited = if before >= self.pool.queue {
                Err(CodeError::Busy)
            } else {
                match tokio::time::timeout(patience, self.pool.slots.acquire()).await {
                    Ok(Ok(permit)) => Ok(permit),
                    Ok(Err(_)) => Err(CodeError::Internal("the code workers have stopped".into())),
                    Err(_) => Err(CodeError::Busy),
                }
            };
            self.pool.waiting.fetch_sub(1, Ordering::SeqCst);
            waited?
        };
        let worker = self.pool.take(tenant).await.map_err(|e| {
            tracing::error!(error = %e, "no code worker");
            CodeError::Internal(e)
        })?;
        Ok((
            Lease {
                pool: self.pool.clone(),
                worker: Some(worker),
            },
            permit,
        ))
    }

    /// The conversation of one call: the request, then `req.svc` calls and log lines until the
    /// outcome.
    async fn converse(
        worker: &mut Worker,
        call: &CodeCall,
        deadline: Instant,
        check: bool,
    ) -> Result<Result<Value, CodeError>, Broken> {
        let channel = |e: std::io::Error| Broken::Channel(e.to_string());
        // The client packages' key: a credential of this call only, for the application the
        // call acts as (none without one), checked below on every call a client makes.
        let credential = call.svc.as_ref().map(|_| call_key());
        let mut request = call.request.clone();
        if let Some(fields) = request.as_object_mut() {
            fields.insert(
                "applicationOptions".into(),
                credential.as_ref().map_or(
                    Value::Null,
                    |key| json!({"apiKey": key, "baseUrl": BASE_URL}),
                ),
            );
        }
        send(
            &mut worker.input,
            &ToWorker::Run {
                tenant: call.tenant_id,
                code: call.code.clone(),
                request,
                svc: call.svc.is_some(),
                check,
            },
        )
        .await
        .map_err(channel)?;
        let trace_id = call.trace_id.as_deref().unwrap_or("-");
        let mut lines = 0usize;
        loop {
            match receive::<FromWorker>(&mut worker.output)
                .await
                .map_err(channel)?
            {
                FromWorker::Done(o) => return Ok(outcome(o)),
                FromWorker::Log { level, text } => {
                    lines += 1;
                    if lines <= MAX_LOG_LINES {
                        let text: String = text.chars().take(MAX_LOG_LINE).collect();
                        let console = console_method(&level);
                        tracing::debug!(trace_id, console, "code: {text:?}");
                        if let Some(sink) = &call.console {
                            sink.line(console, &text);
                        }
                    }
                }
                FromWorker::Svc { method, args, key } => {
                    let reply = match (&call.svc, key, &credential) {
                        (Some(svc), None, _) => svc_reply(svc, method, args, deadline).await,
                        (Some(svc), Some(key), Some(own)) if same_key(&key, own) => {
                            svc_reply(svc, method, args, deadline).await
                        }
                        // A key of another call, made up, or given where no application acts.
                        (_, Some(_), _) => json!({"error": {"status": 401,
                            "title": "Unauthorized",
                            "detail": "the API key is not valid here: a client's key is the \
                                       call's own req.applicationOptions.apiKey"}}),
                        (None, None, _) => {
                            return Err(Broken::Channel("a svc call without svc".into()));
                        }
                    };
                    send(&mut worker.input, &ToWorker::SvcReply(reply))
                        .await
                        .map_err(channel)?;
                }
                FromWorker::Fetch(request) => {
                    let reply = fetch_reply(call.fetch.as_ref(), request, deadline).await;
                    send(&mut worker.input, &ToWorker::FetchReply(reply))
                        .await
                        .map_err(channel)?;
                }
                other @ FromWorker::Ready { .. } => {
                    return Err(Broken::Channel(format!("unexpected {other:?}")));
                }
            }
        }
    }
}

/// What `req.applicationOptions.baseUrl` says. The client packages the vault provides never
/// use the network (their calls travel as `req.bt`'s do), so it names no reachable host
/// (`.invalid` is reserved for that).
const BASE_URL: &str = "https://api.tokenvault.invalid";

/// A fresh credential for one call's client packages: two version-4 UUIDs, 244 random bits.
fn call_key() -> String {
    format!(
        "key_call_{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Whether `given` is `own`, in time that does not depend on where they differ.
fn same_key(given: &str, own: &str) -> bool {
    given.len() == own.len()
        && given
            .bytes()
            .zip(own.bytes())
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}

/// Answers a `req.svc` call on the server, within what is left of the call's deadline. The
/// use case runs as a task of its own: a call the code stops waiting for (its deadline passed,
/// its worker was killed) still completes, so a token it created or deleted has its audit
/// entry. Past the deadline no new one starts.
async fn svc_reply(
    svc: &Arc<dyn Svc>,
    method: String,
    args: Vec<Value>,
    deadline: Instant,
) -> Value {
    let out_of_time = || {
        json!({"error": {"status": 500, "title": "Internal Server Error",
            "detail": "the code ran out of time in a svc call"}})
    };
    let remaining = deadline.saturating_duration_since(Instant::now());
    if remaining.is_zero() {
        return out_of_time();
    }
    let svc = svc.clone();
    let task = tokio::spawn(async move { svc.call(&method, args).await });
    match tokio::time::timeout(remaining, task).await {
        Ok(Ok(Ok(value))) => json!({ "ok": value }),
        Ok(Ok(Err(problem))) => json!({ "error": problem }),
        Ok(Err(_)) => json!({"error": {"status": 500, "title": "Internal Server Error",
            "detail": "the svc call failed"}}),
        Err(_) => out_of_time(),
    }
}

/// Answers a `fetch` of the code on the server: the domain's guarded client sends it, within
/// what is left of the call's deadline. What the worker sent is checked here (it is the
/// sandbox's side of the channel): a malformed request is refused, never sent.
async fn fetch_reply(
    fetch: Option<&Arc<dyn CodeFetch>>,
    request: Value,
    deadline: Instant,
) -> Value {
    let refused = |why: &str| json!({ "error": why });
    let Some(fetch) = fetch else {
        return refused("outbound requests are not available here");
    };
    let remaining = deadline.saturating_duration_since(Instant::now());
    if remaining.is_zero() {
        return refused("the code ran out of time");
    }
    let Some(request) = fetch::request_of(&request) else {
        return refused("the request is not one fetch can send");
    };
    let fetch = fetch.clone();
    let task = tokio::spawn(async move { fetch.fetch(request).await });
    match tokio::time::timeout(remaining, task).await {
        Ok(Ok(Ok(answer))) => json!({ "ok": fetch::answer_of(&answer) }),
        Ok(Ok(Err(why))) => refused(&why),
        Ok(Err(_)) => refused("the request failed"),
        Err(_) => refused("the code ran out of time waiting for the answer"),
    }
}

#[async_trait]
impl CodeRunner for QuickJsRunner {
    async fn run(&self, call: CodeCall) -> Result<Value, CodeError> {
        self.call(call, false).await
    }

    async fn compiles(&self, tenant_id: uuid::Uuid, code: &str) -> Result<bool, CodeError> {
        let call = CodeCall {
            tenant_id,
            code: code.to_string(),
            request: json!({}),
            trace_id: None,
            svc: None,
            fetch: None,
            console: None,
        };
        match self.call(call, true).await {
            Ok(_) => Ok(true),
            Err(CodeError::Compile(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl QuickJsRunner {
    /// One call on a worker, under the tenant's share and the call's deadline: the module run
    /// with the request, or (`check`) only compiled.
    async fn call(&self, call: CodeCall, check: bool) -> Result<Value, CodeError> {
        let limits = self.pool.settings.limits;
        // The tenant's share first: its own flood waits here, not in front of other tenants.
        let _admitted = self
            .pool
            .gates
            .admit(call.tenant_id, limits.timeout)
            .await?;
        let (mut lease, _permit) = self.lease(call.tenant_id, limits.timeout).await?;
        let deadline = Instant::now() + limits.timeout;
        let worker = lease
            .worker()
            .map_err(|_| CodeError::Internal("no worker".into()))?;
        let answer = tokio::time::timeout_at(
            (deadline + GRACE).into(),
            Self::converse(worker, &call, deadline, check),
        )
        .await
        .unwrap_or(Err(Broken::Late));
        match answer {
            Ok(outcome) => {
                lease.release();
                outcome
            }
            // The lease kills the worker and starts another.
            Err(Broken::Late) => Err(self.late()),
            Err(Broken::Channel(why)) => {
                tracing::warn!(why, "a code worker failed mid-call; it is replaced");
                if Instant::now() >= deadline {
                    Err(self.late())
                } else {
                    Err(CodeError::Internal(format!(
                        "the code worker failed: {why}"
                    )))
                }
            }
        }
    }
}

/// The `console` method a line of tenant code came from, as the server's log names it: one of
/// a fixed few, in a field of its own. The line is always logged at the server's `debug`
/// level: a field named `level` (as it was) gave JSON lines a second `level` key, so tenant
/// code set the apparent severity of its own lines (attack review of 3948bc8).
fn console_method(method: &str) -> &'static str {
    match method {
        "error" => "error",
        "warn" => "warn",
        "info" => "info",
        "debug" => "debug",
        _ => "log",
    }
}
