//! Code runtime adapter: the domain's [`CodeRunner`](tokenvault_domain::ports::code::CodeRunner) port
//! on QuickJS (`rquickjs`), per docs/decisions.md §7.
//!
//! Three programs live here, one folder each:
//! - `pool/` runs in the server: a fixed pool of **worker processes**, started from the
//!   server's own binary with an empty environment, each lent to one call at a time
//!   (`pool/run.rs`). The server bounds what the engine cannot: a call that has not answered
//!   by its deadline plus [`GRACE`] (a builtin that never reaches an interrupt check) is
//!   answered as out of time, and its worker is killed and replaced. A worker that dies, or
//!   whose caller went away mid-call, is replaced too. One tenant holds at most its share of
//!   the workers and of the queue (`pool/gate.rs`).
//! - `worker/` is the worker process: it warms one QuickJS engine, puts itself under resource
//!   limits and a seccomp filter (`worker/sandbox.rs`), and runs one call at a time, each in a
//!   fresh context (nothing one call defines reaches the next) under the engine's own limits
//!   (interrupt handler, memory limit, result size; `worker/engine.rs`).
//! - `node/` is what tenant code loads: one folder per Node module (its JavaScript, its host
//!   functions, its tests) and one registry of them (`node/mod.rs`).
//!
//! The server and a worker talk over the worker's stdin and stdout (`protocol.rs`): `req.svc`
//! calls and `console` lines come back to the server, which checks and answers them. The
//! operator's npm packages (`packages.rs`) are compiled by the server and loaded by workers.

mod node;
mod packages;
mod pool;
mod protocol;
mod settings;
pub mod worker;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Semaphore;

pub use packages::CodeModules;
use pool::Pool;
use pool::gate::Gates;
use protocol::ToWorker;
pub use settings::{RunnerSettings, WorkerCommand};
pub use worker::engine::Limits;

/// How long past its deadline a call may run before its worker is killed.
pub const GRACE: Duration = Duration::from_millis(250);
/// How many calls may wait for a worker (per worker) before new ones are refused.
const QUEUE_PER_WORKER: usize = 16;

/// The pool of worker processes (a clone shares it).
#[derive(Clone)]
pub struct QuickJsRunner {
    pool: Arc<Pool>,
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
