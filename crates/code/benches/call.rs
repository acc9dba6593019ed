//! A warm call (a pool already started; a fresh context on a warm runtime in a worker process),
//! alone and back to back, and a cold one (a new pool: a worker process started, its runtime
//! warmed and sandboxed, then the call) of a trivial formula. Run with
//! `cargo bench -p tokenvault-code`; compare with the direct-call baseline in the same run.

#![allow(missing_docs, clippy::unwrap_used)]

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tokenvault_code::{Limits, QuickJsRunner, RunnerSettings, WorkerCommand};
use tokenvault_domain::ports::code::{CodeCall, CodeRunner};

const TRIVIAL: &str = "module.exports = async (req) => ({ raw: { args: req.args } });";

fn settings(workers: usize) -> RunnerSettings {
    RunnerSettings {
        workers,
        limits: Limits {
            timeout: Duration::from_secs(10),
            memory: 64 << 20,
            max_output: 1 << 20,
        },
        command: WorkerCommand {
            program: env!("CARGO_BIN_EXE_tokenvault-code-worker").into(),
            args: vec!["code-worker".into()],
        },
        require_sandbox: true,
        tenant_share: 1.0,
        modules: std::sync::Arc::default(),
    }
}

fn call() -> CodeCall {
    CodeCall {
        tenant_id: uuid::Uuid::nil(),
        code: TRIVIAL.into(),
        request: json!({"args": {"x": "hello"}, "configuration": {}, "svc": null}),
        trace_id: None,
        svc: None,
        fetch: None,
        console: None,
    }
}

fn calls(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let warm = rt.block_on(async { QuickJsRunner::start(settings(1)).await.unwrap() });
    rt.block_on(warm.run(call())).unwrap();
    c.bench_function("baseline: a oneshot round trip to a thread", |b| {
        let (tx, rx) = std::sync::mpsc::channel::<tokio::sync::oneshot::Sender<()>>();
        std::thread::spawn(move || {
            while let Ok(reply) = rx.recv() {
                let _ = reply.send(());
            }
        });
        b.iter(|| {
            let (reply, done) = tokio::sync::oneshot::channel();
            tx.send(reply).unwrap();
            rt.block_on(done).unwrap();
        });
    });
    c.bench_function(
        "baseline: a oneshot round trip to a thread after a pause",
        |b| {
            let (tx, rx) = std::sync::mpsc::channel::<tokio::sync::oneshot::Sender<()>>();
            std::thread::spawn(move || {
                while let Ok(reply) = rx.recv() {
                    let _ = reply.send(());
                }
            });
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    std::thread::sleep(Duration::from_millis(2));
                    let started = std::time::Instant::now();
                    let (reply, done) = tokio::sync::oneshot::channel();
                    tx.send(reply).unwrap();
                    rt.block_on(done).unwrap();
                    total += started.elapsed();
                }
                total
            });
        },
    );
    // A worker makes the next call's context after answering; a call that finds it ready pays
    // only for its own work. Measured with a pause between calls, outside the timing.
    c.bench_function("warm call of a trivial formula (context ready)", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                std::thread::sleep(Duration::from_millis(2));
                let started = std::time::Instant::now();
                rt.block_on(warm.run(call())).unwrap();
                total += started.elapsed();
            }
            total
        });
    });
    // Back to back: each call also waits for its context to be made (the CPU cost of a call).
    c.bench_function("warm calls back to back", |b| {
        b.iter(|| rt.block_on(warm.run(call())).unwrap());
    });
    c.bench_function("cold call (new pool of one worker process)", |b| {
        b.iter(|| {
            rt.block_on(async {
                let cold = QuickJsRunner::start(settings(1)).await.unwrap();
                cold.run(call()).await.unwrap()
            })
        });
    });
}

criterion_group!(benches, calls);
criterion_main!(benches);
