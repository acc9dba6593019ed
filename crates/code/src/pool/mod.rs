//! The worker processes of a runner: starting one and waiting until it is warm and sandboxed,
//! keeping the idle ones, and lending one to a call, killed and replaced unless it comes back
//! clean.

mod fetch;
pub(crate) mod gate;
mod run;

use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::BufReader;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::Semaphore;
use uuid::Uuid;

use crate::protocol::{FromWorker, receive, send_encoded};
use crate::settings::RunnerSettings;
use gate::Gates;

/// Idle workers kept warm per call that may run at once (`TOKENVAULT_CODE_WORKERS`): a
/// process runs one tenant's code only, so a tenant that calls again finds its own only while
/// it is kept. Each idle worker holds ~11 MiB (its warm engine).
pub(crate) const WARM_PER_SLOT: usize = 8;

/// How long a worker may take to start (exec, warm the engine, sandbox itself).
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// A running worker process and its channel.
pub(crate) struct Worker {
    pub(crate) child: Child,
    pub(crate) input: ChildStdin,
    pub(crate) output: BufReader<ChildStdout>,
    /// The tenant whose code it has run (`None`: none yet). It never runs another's: a
    /// memory-safety bug in the engine would otherwise let one tenant's code read what the
    /// process held of the tenant before it (arguments, configuration, the call's key).
    pub(crate) tenant: Option<Uuid>,
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
            // Never the server's own log stream: what a worker writes there is read here and
            // logged as its lines, escaped and bounded (`relay_stderr`).
            .stderr(Stdio::piped())
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
        if let Some(stderr) = child.stderr.take() {
            relay_stderr(stderr, child.id());
        }
        let mut worker = Worker {
            child,
            input,
            output: BufReader::new(output),
            tenant: None,
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

    /// A worker for a call of `tenant` (cordons: a process runs one tenant's code only): an
    /// idle one that has run this tenant's code, else one that has run none; else a fresh one
    /// is started for the call, and when as many are kept warm already the worker idle longest
    /// is ended.
    pub(crate) async fn take(&self, tenant: Uuid) -> Result<Worker, String> {
        loop {
            let (chosen, evicted) = {
                let mut idle = self.idle();
                let found = idle
                    .iter()
                    .rposition(|w| w.tenant == Some(tenant))
                    .or_else(|| idle.iter().position(|w| w.tenant.is_none()));
                match found {
                    Some(i) => (Some(idle.remove(i)), None),
                    // Room for one more warm process: the others stay warm for their tenants.
                    None if idle.len() < self.warm() => (None, None),
                    None => (None, Some(evict(&mut idle))),
                }
            };
            if let Some(mut other) = evicted {
                // Reaped by tokio; its place goes to the fresh worker below.
                let _ = other.child.start_kill();
            }
            let Some(mut worker) = chosen else {
                let mut worker = self.spawn().await?;
                worker.tenant = Some(tenant);
                return Ok(worker);
            };
            if matches!(worker.child.try_wait(), Ok(None)) {
                worker.tenant = Some(tenant);
                return Ok(worker);
            }
            // It died while idle (killed from outside): dropped, reaped, and not used.
            tracing::warn!("a code worker died while idle; it is replaced");
        }
    }

    /// How many idle workers are kept warm: [`WARM_PER_SLOT`] per call that may run at once,
    /// so that as many tenants keep a process of their own between their calls.
    pub(crate) fn warm(&self) -> usize {
        self.settings.workers.max(1) * WARM_PER_SLOT
    }

    /// A worker that served a call cleanly goes back (unless as many are kept warm already:
    /// then the one idle longest is ended).
    pub(crate) fn give_back(&self, worker: Worker) {
        let evicted = {
            let mut idle = self.idle();
            idle.push(worker);
            (idle.len() > self.warm()).then(|| evict(&mut idle))
        };
        if let Some(mut old) = evicted {
            let _ = old.child.start_kill();
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

/// The idle worker to end when too many are kept: the one idle longest among those whose
/// tenant keeps another idle one, else the one idle longest (every tenant keeps one while it
/// can). `idle` is not empty, oldest first.
fn evict(idle: &mut Vec<Worker>) -> Worker {
    let spare = idle.iter().position(|w| {
        w.tenant
            .is_some_and(|t| idle.iter().filter(|o| o.tenant == Some(t)).count() > 1)
    });
    idle.remove(spare.unwrap_or(0))
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

/// Lines a worker's stderr is relayed to the log at most; later ones are read and dropped.
const STDERR_LINES: usize = 20;
/// The longest stderr line relayed (bytes).
const STDERR_LINE: usize = 1024;

/// Reads what worker `pid` writes to its stderr (a panic message, the engine's own complaint)
/// and logs each line as a field of the server's own line, escaped and bounded: nothing of a
/// worker reaches the server's log stream as text of its own, and a line without end costs
/// [`STDERR_LINE`] bytes at most (attack review of e57d89c: a whole line was read first).
fn relay_stderr(mut stderr: ChildStderr, pid: Option<u32>) {
    use tokio::io::AsyncReadExt as _;
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    handle.spawn(async move {
        let mut lines = BoundedLines::default();
        let mut chunk = [0u8; 4096];
        while let Ok(n @ 1..) = stderr.read(&mut chunk).await {
            for line in lines.feed(&chunk[..n]) {
                tracing::warn!(worker = pid, line = ?line, "a code worker wrote to stderr");
            }
        }
        if let Some(line) = lines.rest() {
            tracing::warn!(worker = pid, line = ?line, "a code worker wrote to stderr");
        }
    });
}

/// Lines cut from a byte stream: each at most [`STDERR_LINE`] bytes (the rest of a longer one
/// dropped), and at most [`STDERR_LINES`] of them (later ones dropped).
#[derive(Default)]
struct BoundedLines {
    line: Vec<u8>,
    given: usize,
}

impl BoundedLines {
    /// The lines `bytes` completes.
    fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        for &b in bytes {
            if b == b'\n' {
                if let Some(line) = self.rest() {
                    out.push(line);
                }
            } else if self.line.len() < STDERR_LINE {
                self.line.push(b);
            }
        }
        out
    }

    /// The line begun, if any and if still within the count.
    fn rest(&mut self) -> Option<String> {
        let line = String::from_utf8_lossy(&self.line).into_owned();
        self.line.clear();
        self.given += 1;
        (self.given <= STDERR_LINES).then_some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_lines_are_bounded_in_length_and_count() {
        let mut lines = BoundedLines::default();
        let endless = vec![b'x'; 10 * STDERR_LINE];
        assert!(lines.feed(&endless).is_empty());
        assert!(
            lines.line.len() <= STDERR_LINE,
            "nothing kept past the bound"
        );
        let out = lines.feed(b"\nsecond\n");
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].len(), STDERR_LINE);
        assert_eq!(out[1], "second");
        let many = b"l\n".repeat(3 * STDERR_LINES);
        let given = lines.feed(&many).len();
        assert_eq!(
            given,
            STDERR_LINES - 2,
            "at most {STDERR_LINES} lines in all"
        );
    }
}
