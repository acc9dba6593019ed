//! What the server sets for its code runner: the worker processes' program, how many there
//! are, the limits of every call and each tenant's share.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::packages::CodeModules;
use crate::worker::engine::Limits;

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
