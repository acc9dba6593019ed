//! The worker processes of a runner: starting one and waiting until it is warm and sandboxed,
//! keeping the idle ones, and lending one to a call, killed and replaced unless it comes back
//! clean.

use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::BufReader;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Semaphore;

use crate::gate::Gates;
use crate::protocol::{FromWorker, receive, send_encoded};
use crate::settings::RunnerSettings;

/// How long a worker may take to start (exec, warm the engine, sandbox itself).
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// A running worker process and its channel.
pub(crate) struct Worker {
    pub(crate) child: Child,
    pub(crate) input: ChildStdin,
    pub(crate) output: BufReader<ChildStdout>,
}

/// What ended a conversation with a worker that cannot be trusted with another call.
#[derive(Debug)]
pub(crate) enum Broken {
    /// It did not answer in time.
    Late,
    /// Its channel failed or it broke the protocol.
    Channel(String),
}

pub(crate) struct Pool {
    pub(crate) settings: RunnerSettings,
    pub(crate) idle: Mutex<Vec<Worker>>,
    /// One permit per worker: a call holds one while it runs.
    pub(crate) slots: Semaphore,
    /// Calls waiting for a worker, at most `queue`.
    pub(crate) waiting: std::sync::atomic::AtomicUsize,
    pub(crate) queue: usize,
    /// A replacement started by a readiness check is on its way.
    pub(crate) replacing: std::sync::atomic::AtomicBool,
    pub(crate) gates: Gates,
    /// The first frame every worker gets: limits and the operator's modules, encoded once.
    pub(crate) init: Vec<u8>,
}

impl Pool {
    pub(crate) fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Worker>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts one worker and waits for it to say it is ready.
    pub(crate) async fn spawn(&self) -> Result<Worker, String> {
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
    pub(crate) async fn take(&self) -> Result<Worker, String> {
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
    pub(crate) fn give_back(&self, worker: Worker) {
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
pub(crate) struct Lease {
    pub(crate) pool: Arc<Pool>,
    pub(crate) worker: Option<Worker>,
}

impl Lease {
    pub(crate) fn worker(&mut self) -> Result<&mut Worker, Broken> {
        self.worker
            .as_mut()
            .ok_or_else(|| Broken::Channel("no worker".into()))
    }

    pub(crate) fn release(mut self) {
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
