//! Code runtime adapter: the domain's [`CodeRunner`] port on QuickJS (`rquickjs`), per
//! docs/decisions.md §7.
//!
//! A QuickJS runtime cannot move between threads, so a fixed pool of worker threads each owns
//! one, warm, and takes calls from a shared queue. Every call gets a fresh context on its
//! worker's runtime (its own globals and prototypes: nothing leaks to the next call), a deadline
//! enforced by the interrupt handler while JavaScript runs and by the event loop while it waits
//! on timers, and the runtime's memory limit. A runtime that ran out of memory or was stopped is
//! replaced before the next call. The async side waits for the answer with a margin over the
//! deadline, so a stuck worker cannot hold a request forever.

mod engine;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokenvault_domain::code::{CodeCall, CodeError, CodeRunner};
use tokio::sync::oneshot;

use engine::Engine;
pub use engine::Limits;

/// Settings of the pool.
#[derive(Clone, Copy, Debug)]
pub struct RunnerSettings {
    /// Worker threads, each with its own runtime (at least 1).
    pub workers: usize,
    /// Limits of every call.
    pub limits: Limits,
}

impl Default for RunnerSettings {
    fn default() -> Self {
        Self {
            workers: 4,
            limits: Limits {
                timeout: Duration::from_secs(10),
                memory: 64 << 20,
                max_output: 1 << 20,
            },
        }
    }
}

/// How many calls may wait for a worker before new ones are refused (per worker).
const QUEUE_PER_WORKER: usize = 16;

enum Job {
    Check(String, oneshot::Sender<Result<(), String>>),
    Run(Box<CodeCall>, oneshot::Sender<Result<Value, CodeError>>),
}

/// The pool of QuickJS workers.
pub struct QuickJsRunner {
    queue: Mutex<mpsc::SyncSender<Job>>,
    limits: Limits,
}

impl std::fmt::Debug for QuickJsRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuickJsRunner")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl QuickJsRunner {
    /// Starts the worker threads. They end when the runner is dropped.
    pub fn start(settings: RunnerSettings) -> std::io::Result<Self> {
        // Bounded: a flood of slow calls is refused (503) instead of queueing for minutes.
        let (tx, rx) = mpsc::sync_channel::<Job>(settings.workers.max(1) * QUEUE_PER_WORKER);
        let rx = Arc::new(Mutex::new(rx));
        // `req.svc` calls run the token use cases on the runtime that started the pool.
        let handle = tokio::runtime::Handle::try_current().ok();
        for i in 0..settings.workers.max(1) {
            let rx = rx.clone();
            let limits = settings.limits;
            let handle = handle.clone();
            std::thread::Builder::new()
                .name(format!("tokenvault-code-{i}"))
                .spawn(move || work(&rx, limits, handle))?;
        }
        Ok(Self {
            queue: Mutex::new(tx),
            limits: settings.limits,
        })
    }

    fn submit(&self, job: Job) -> Result<(), CodeError> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .try_send(job)
            .map_err(|e| match e {
                mpsc::TrySendError::Full(_) => CodeError::Busy,
                mpsc::TrySendError::Disconnected(_) => {
                    CodeError::Internal("the code workers have stopped".into())
                }
            })
    }

    /// How long the async side waits for a worker: the call's deadline plus a margin.
    fn patience(&self) -> Duration {
        self.limits.timeout + Duration::from_secs(2)
    }
}

/// A worker: takes jobs until the queue closes; replaces its engine after a call that ran out
/// of memory or was stopped.
fn work(
    queue: &Mutex<mpsc::Receiver<Job>>,
    limits: Limits,
    handle: Option<tokio::runtime::Handle>,
) {
    let mut engine = None;
    loop {
        let job = {
            let rx = queue
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match rx.recv() {
                Ok(job) => job,
                Err(_) => return,
            }
        };
        if engine.is_none() {
            match Engine::new(limits, handle.clone()) {
                Ok(e) => engine = Some(e),
                Err(e) => {
                    tracing::error!(error = %e, "cannot start a QuickJS runtime");
                    fail(job, &e);
                    continue;
                }
            }
        }
        let Some(current) = engine.as_mut() else {
            continue;
        };
        // A panic (in a host function, say) costs the runtime, never the worker.
        let contained =
            |f: &mut dyn FnMut()| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_ok();
        match job {
            Job::Check(code, reply) => {
                let mut outcome = Err("the code could not be checked".to_string());
                if !contained(&mut || outcome = current.check(&code)) {
                    engine = None;
                }
                let _ = reply.send(outcome);
            }
            // Nobody waits for it any more (the caller gave up): do not run it.
            Job::Run(_, reply) if reply.is_closed() => {}
            Job::Run(call, reply) => {
                let mut outcome = Err(CodeError::Internal("the code worker failed".into()));
                // Replaced unless the call says it is clean (a panic leaves `discard` true).
                let mut discard = true;
                contained(&mut || (outcome, discard) = current.run(&call));
                if discard {
                    engine = None;
                }
                let _ = reply.send(outcome);
                // The spent context is released, and the next call's made, after the answer.
                if let Some(current) = engine.as_mut() {
                    let mut ready = Err(String::new());
                    contained(&mut || {
                        ready = if current.finish() {
                            Err("a job was left behind".into())
                        } else {
                            current.prepare()
                        };
                    });
                    if ready.is_err() {
                        engine = None;
                    }
                }
            }
        }
    }
}

fn fail(job: Job, why: &str) {
    match job {
        Job::Check(_, reply) => {
            let _ = reply.send(Err(why.to_string()));
        }
        Job::Run(_, reply) => {
            let _ = reply.send(Err(CodeError::Internal(why.to_string())));
        }
    }
}

#[async_trait]
impl CodeRunner for QuickJsRunner {
    async fn check(&self, code: &str) -> Result<(), String> {
        let (tx, rx) = oneshot::channel();
        self.submit(Job::Check(code.to_string(), tx))
            .map_err(|_| "the code workers have stopped".to_string())?;
        match tokio::time::timeout(self.patience(), rx).await {
            Ok(Ok(outcome)) => outcome,
            _ => Err("the code could not be checked in time".into()),
        }
    }

    async fn run(&self, call: CodeCall) -> Result<Value, CodeError> {
        let (tx, rx) = oneshot::channel();
        self.submit(Job::Run(Box::new(call), tx))?;
        match tokio::time::timeout(self.patience(), rx).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(CodeError::Internal("a code worker stopped".into())),
            Err(_) => Err(CodeError::Limit(format!(
                "the code ran longer than {} ms",
                self.limits.timeout.as_millis()
            ))),
        }
    }
}
