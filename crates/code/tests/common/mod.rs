//! What the runner's tests share: the pool they start, on this crate's worker binary.

use std::time::Duration;

use tokenvault_code::{Limits, RunnerSettings, WorkerCommand};

/// Every call's deadline in these tests.
pub const TIMEOUT: Duration = Duration::from_millis(500);

/// `workers` worker processes under the sandbox, 16 MiB each, half the pool per tenant.
pub fn settings(workers: usize) -> RunnerSettings {
    RunnerSettings {
        workers,
        limits: Limits {
            timeout: TIMEOUT,
            memory: 16 << 20,
            max_output: 1 << 20,
        },
        command: WorkerCommand {
            program: env!("CARGO_BIN_EXE_tokenvault-code-worker").into(),
            args: vec!["code-worker".into()],
        },
        require_sandbox: true,
        tenant_share: 0.5,
        modules: std::sync::Arc::default(),
    }
}
