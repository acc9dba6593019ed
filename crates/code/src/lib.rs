//! Code runtime adapter: the domain's [`CodeRunner`] port on QuickJS (`rquickjs`), per
//! docs/decisions.md §7.
//!
//! Tenant code never runs in the server's address space. A fixed pool of **worker processes**
//! (`worker.rs`), started from the server's own binary with an empty environment, each warms one
//! QuickJS engine, puts itself under resource limits and a seccomp filter (`sandbox.rs`), and
//! runs one call at a time, talking to the server over its stdin and stdout (`protocol.rs`):
//! `req.svc` calls and `console` lines come back to the server, which checks and answers them.
//! Inside the worker every call gets a fresh context (nothing one call defines reaches the next)
//! and the engine's own limits (interrupt handler, memory limit, result size; `engine.rs`).
//!
//! The server bounds what the engine cannot: a call that has not answered by its deadline plus
//! [`GRACE`] (a builtin that never reaches an interrupt check) is answered as out of time, and
//! its worker is killed and replaced. A worker that dies, or whose caller went away mid-call, is
//! replaced too. One tenant holds at most its share of the workers and of the queue (`gate.rs`).

mod budget;
mod builtins;
mod cipher;
mod code_cache;
mod ecdh;
mod engine;
mod failure;
mod fetch;
mod gate;
mod hash;
mod host_calls;
mod host_function;
mod intrinsics;
mod kdf;
mod keys;
mod lazy;
mod modules;
mod names;
mod protocol;
mod sandbox;
mod script;
mod seal;
mod sign;
mod url;
mod vendored;
pub mod worker;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokenvault_domain::code::{CodeCall, CodeError, CodeFetch, CodeRunner, Svc};
use tokio::io::BufReader;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Semaphore;

pub use engine::Limits;
use gate::Gates;
pub use modules::CodeModules;
use protocol::{FromWorker, Outcome, ToWorker, receive, send, send_encoded};

/// How long past its deadline a call may run before its worker is killed.
pub const GRACE: Duration = Duration::from_millis(250);
/// How long a worker may take to start (exec, warm the engine, sandbox itself).
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How many calls may wait for a worker (per worker) before new ones are refused.
const QUEUE_PER_WORKER: usize = 16;
/// The most `console` lines one call writes to the log, and the longest kept.
const MAX_LOG_LINES: usize = 200;
const MAX_LOG_LINE: usize = 4096;

/// The program a worker process runs: the server's own binary with the worker's subcommand.
#[derive(Clone, Debug)]
pub struct WorkerCommand {
    /// The executable.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl WorkerCommand {
    /// This process's own binary, run as `<binary> code-worker`.
    pub fn current_exe() -> std::io::Result<Self> {
        Ok(Self {
            program: std::env::current_exe()?,
            args: vec!["code-worker".into()],
        })
    }
}

/// Settings of the pool.
#[derive(Clone, Debug)]
pub struct RunnerSettings {
    /// Worker processes (at least 1).
    pub workers: usize,
    /// Limits of every call.
    pub limits: Limits,
    /// What a worker runs.
    pub command: WorkerCommand,
    /// `false` only by the operator's explicit opt-out: workers run without the seccomp filter
    /// where it cannot be installed (logged). Otherwise such a worker is refused.
    pub require_sandbox: bool,
    /// The share of the workers, and of the queue, that one tenant may hold (0 < share ≤ 1;
    /// at least one worker and one place).
    pub tenant_share: f64,
    /// The operator's npm packages (`TOKENVAULT_CODE_MODULES`), compiled; empty by default.
    pub modules: Arc<CodeModules>,
}

impl RunnerSettings {
    /// Four workers, the limits of docs/decisions.md §7, three quarters per tenant.
    pub fn new(command: WorkerCommand) -> Self {
        Self {
            workers: 4,
            limits: Limits {
                timeout: Duration::from_secs(10),
                memory: 64 << 20,
                max_output: 1 << 20,
            },
            command,
            require_sandbox: true,
            tenant_share: 0.75,
            modules: Arc::default(),
        }
    }
}

/// A running worker process and its channel.
struct Worker {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

/// What ended a conversation with a worker that cannot be trusted with another call.
#[derive(Debug)]
enum Broken {
    /// It did not answer in time.
    Late,
    /// Its channel failed or it broke the protocol.
    Channel(String),
}

/// The pool of worker processes (a clone shares it).
#[derive(Clone)]
pub struct QuickJsRunner {
    pool: Arc<Pool>,
}

struct Pool {
    settings: RunnerSettings,
    idle: Mutex<Vec<Worker>>,
    /// One permit per worker: a call holds one while it runs.
    slots: Semaphore,
    /// Calls waiting for a worker, at most `queue`.
    waiting: std::sync::atomic::AtomicUsize,
    queue: usize,
    /// A replacement started by a readiness check is on its way.
    replacing: std::sync::atomic::AtomicBool,
    gates: Gates,
    /// The first frame every worker gets: limits and the operator's modules, encoded once.
    init: Vec<u8>,
}

impl std::fmt::Debug for QuickJsRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuickJsRunner")
            .field("workers", &self.pool.settings.workers)
            .field("limits", &self.pool.settings.limits)
            .finish_non_exhaustive()
    }
}

impl QuickJsRunner {
    /// Starts the worker processes and waits until each is warm and sandboxed.
    ///
    /// # Errors
    /// A worker that cannot start, or cannot sandbox itself while the sandbox is required.
    pub async fn start(settings: RunnerSettings) -> Result<Self, String> {
        let workers = settings.workers.max(1);
        let queue = workers * QUEUE_PER_WORKER;
        let limits = settings.limits;
        let init = protocol::encode_within(
            &ToWorker::Init {
                timeout_ms: u64::try_from(limits.timeout.as_millis()).unwrap_or(u64::MAX),
                memory: limits.memory,
                max_output: limits.max_output,
                sandbox: true,
                modules: settings.modules.files().to_vec(),
            },
            protocol::MAX_INIT_FRAME,
        )
        .map_err(|e| format!("the code modules do not fit a worker's first frame: {e}"))?;
        let pool = Arc::new(Pool {
            init,
            gates: Gates::new(workers, queue, settings.tenant_share),
            slots: Semaphore::new(workers),
            waiting: std::sync::atomic::AtomicUsize::new(0),
            queue,
            replacing: std::sync::atomic::AtomicBool::new(false),
            idle: Mutex::new(Vec::with_capacity(workers)),
            settings,
        });
        let started = futures_util::future::join_all((0..workers).map(|_| pool.spawn())).await;
        for worker in started {
            pool.idle().push(worker?);
        }
        Ok(Self { pool })
    }

    /// How many workers are warm and idle (for readiness).
    pub fn idle_workers(&self) -> usize {
        self.pool.idle().len()
    }

    /// Readiness: `Ok` while a call could run. Idle workers that died are dropped; when no
    /// worker is left alive (idle or busy), one replacement is started in the background (one
    /// at a time, however often this is asked) and the answer is an error until it is ready. A
    /// pool whose workers are all busy is ready: calls queue for them.
    ///
    /// # Errors
    /// No worker is alive.
    pub fn check_ready(&self) -> Result<(), String> {
        let alive = {
            let mut idle = self.pool.idle();
            idle.retain_mut(|w| matches!(w.child.try_wait(), Ok(None)));
            idle.len()
        };
        let busy =
            (self.pool.settings.workers.max(1)).saturating_sub(self.pool.slots.available_permits());
        if alive + busy > 0 {
            return Ok(());
        }
        if !self
            .pool
            .replacing
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            let pool = self.pool.clone();
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move {
                    match pool.spawn().await {
                        Ok(worker) => pool.give_back(worker),
                        Err(e) => tracing::error!(error = %e, "cannot start a code worker"),
                    }
                    pool.replacing
                        .store(false, std::sync::atomic::Ordering::SeqCst);
                });
            } else {
                self.pool
                    .replacing
                    .store(false, std::sync::atomic::Ordering::SeqCst);
            }
        }
        Err("no code worker is alive; one is starting".into())
    }

    /// The process ids of the workers idle now (for tests that look at them).
    pub fn worker_pids(&self) -> Vec<u32> {
        self.pool
            .idle()
            .iter()
            .filter_map(|w| w.child.id())
            .collect()
    }
}

impl Pool {
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Worker>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts one worker and waits for it to say it is ready.
    async fn spawn(&self) -> Result<Worker, String> {
        let mut child = Command::new(&self.settings.command.program)
            .args(&self.settings.command.args)
            // Nothing of the server's environment (keys, database URLs) reaches the worker.
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot start a code worker ({}): {e}",
                    self.settings.command.program.display()
                )
            })?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("a code worker has no channel".into());
        };
        let mut worker = Worker {
            child,
            input,
            output: BufReader::new(output),
        };
        let ready = tokio::time::timeout(START_TIMEOUT, async {
            send_encoded(&mut worker.input, &self.init).await?;
            receive::<FromWorker>(&mut worker.output).await
        })
        .await;
        match ready {
            Ok(Ok(FromWorker::Ready {
                sandboxed: true, ..
            })) => Ok(worker),
            Ok(Ok(FromWorker::Ready { why, .. })) if !self.settings.require_sandbox => {
                tracing::warn!(
                    why = why.as_deref().unwrap_or("-"),
                    "a code worker runs WITHOUT its seccomp sandbox (TOKENVAULT_CODE_SANDBOX=off)"
                );
                Ok(worker)
            }
            Ok(Ok(FromWorker::Ready { why, .. })) => Err(format!(
                "the code workers cannot sandbox themselves here ({}); set \
                 TOKENVAULT_CODE_SANDBOX=off to run tenant code without seccomp",
                why.as_deref().unwrap_or("unknown")
            )),
            Ok(Ok(other)) => Err(format!("a code worker said {other:?} instead of ready")),
            Ok(Err(e)) => Err(format!("a code worker did not start: {e}")),
            Err(_) => Err("a code worker did not start in time".into()),
        }
    }

    /// A worker for a call: an idle one, or a fresh one when the last was killed and its
    /// replacement is not ready yet.
    async fn take(&self) -> Result<Worker, String> {
        loop {
            let idle = self.idle().pop();
            let Some(mut worker) = idle else {
                return self.spawn().await;
            };
            if matches!(worker.child.try_wait(), Ok(None)) {
                return Ok(worker);
            }
            // It died while idle (killed from outside): dropped, reaped, and not used.
            tracing::warn!("a code worker died while idle; it is replaced");
        }
    }

    /// A worker that served a call cleanly goes back (unless the pool is full).
    fn give_back(&self, worker: Worker) {
        let mut idle = self.idle();
        if idle.len() < self.settings.workers.max(1) {
            idle.push(worker);
        }
    }

    /// Starts a worker in the background in place of one that was killed.
    fn replace(self: &Arc<Self>) {
        let pool = self.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                match pool.spawn().await {
                    Ok(worker) => pool.give_back(worker),
                    Err(e) => tracing::error!(error = %e, "cannot replace a code worker"),
                }
            });
        }
    }
}

/// A worker lent to one call. Unless the call gives it back clean, it is killed when the lease
/// ends (timed out, broken, or the caller went away mid-call) and a fresh one takes its place.
struct Lease {
    pool: Arc<Pool>,
    worker: Option<Worker>,
}

impl Lease {
    fn worker(&mut self) -> Result<&mut Worker, Broken> {
        self.worker
            .as_mut()
            .ok_or_else(|| Broken::Channel("no worker".into()))
    }

    fn release(mut self) {
        if let Some(worker) = self.worker.take() {
            self.pool.give_back(worker);
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(mut worker) = self.worker.take() {
            // `kill_on_drop` would too; tokio reaps the process.
            let _ = worker.child.start_kill();
            self.pool.replace();
        }
    }
}

fn outcome(o: Outcome) -> Result<Value, CodeError> {
    match o {
        Outcome::Ok(v) => Ok(v),
        Outcome::Thrown(status, message, errors) => Err(CodeError::Thrown {
            status,
            message,
            errors,
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

    /// A worker for one call, waiting at most `patience` for a free one.
    async fn lease(
        &self,
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
        let worker = self.pool.take().await.map_err(|e| {
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
                        let level: String = level.chars().take(8).collect();
                        let text: String = text.chars().take(MAX_LOG_LINE).collect();
                        tracing::debug!(trace_id, level, "code: {text:?}");
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
        let limits = self.pool.settings.limits;
        // The tenant's share first: its own flood waits here, not in front of other tenants.
        let _admitted = self
            .pool
            .gates
            .admit(call.tenant_id, limits.timeout)
            .await?;
        let (mut lease, _permit) = self.lease(limits.timeout).await?;
        let deadline = Instant::now() + limits.timeout;
        let worker = lease
            .worker()
            .map_err(|_| CodeError::Internal("no worker".into()))?;
        let answer = tokio::time::timeout_at(
            (deadline + GRACE).into(),
            Self::converse(worker, &call, deadline),
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
