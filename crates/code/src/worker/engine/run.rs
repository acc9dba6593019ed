//! A call on the engine: its context taken (made if none was ready), its deadline set, and its
//! outcome answered as the limit it ran into; then the spent context released after the answer,
//! saying whether the runtime is to be replaced.

use std::time::Instant;

use serde_json::Value as Json;
use tokenvault_domain::ports::code::CodeError;

use super::{Call, Engine, MAX_GROWTH};
use crate::worker::failure::{NON_ERROR, Stop};

impl Engine {
    /// Releases the context of the last call. `true` when the runtime is to be replaced: jobs
    /// are queued per runtime, not per context, so a job that call left behind (a promise chain
    /// that never ends, a finalizer) would run in the next tenant's call; and a runtime whose
    /// tables the call grew past [`MAX_GROWTH`] would give the next call less memory.
    pub fn finish(&mut self) -> bool {
        if self.spent.take().is_none() {
            return false;
        }
        self.state.timers.borrow_mut().clear();
        self.runtime.run_gc();
        self.runtime.is_job_pending()
            || self.meter.used() > self.baseline.saturating_add(MAX_GROWTH)
    }

    /// Runs one call on the prepared context (preparing one if needed); `finish` throws that
    /// context away. The `bool` is whether the runtime should be thrown away too (it ran out of
    /// memory or was stopped mid-way: its heap is not to be trusted for the next tenant).
    pub fn run(&mut self, call: &Call<'_>) -> (Result<Json, CodeError>, bool) {
        if let Err(e) = self.prepare() {
            return (Err(CodeError::Internal(e)), true);
        }
        let Some(prepared) = self.prepared.take() else {
            return (Err(CodeError::Internal("no context".into())), true);
        };
        self.state.lines.set(0);
        self.state.timers.borrow_mut().clear();
        self.meter.reset();
        let started = Instant::now();
        let deadline = started + self.limits.timeout;
        self.deadline.set(Some(deadline));
        let (outcome, dirty) = prepared.context.with(|ctx| {
            let outcome = self.call_in(&ctx, &prepared, call, deadline);
            // The pending exception is per runtime: one left by mapping the code's error (a
            // throwing getter or `toJSON`) would keep this context alive into the next call
            // and surface there. Cleared here; such a runtime, or one stopped while mapping,
            // is not reused.
            let dirty = ctx.has_exception() || Instant::now() >= deadline;
            drop(ctx.catch());
            (outcome, dirty)
        });
        self.deadline.set(None);
        // Released by `finish`, after the caller has its answer.
        self.spent = Some(prepared);
        // A call whose runtime was refused memory ran out of it: code may have caught the
        // engine's error, or QuickJS could not even allocate it (a bare value is thrown then).
        // Its runtime is not kept for the next call either way.
        let exhausted = self.meter.refused();
        let outcome = match outcome {
            Err(Ok(CodeError::Thrown {
                errors: None,
                message,
                ..
            })) if exhausted && message == NON_ERROR => Err(Err(Stop::Memory)),
            other => other,
        };
        let dirty = dirty || exhausted;
        match outcome {
            Ok(v) => (Ok(v), dirty),
            // What the code threw ends its context only; `finish` still looks for leftovers.
            Err(Ok(e @ (CodeError::Thrown { .. } | CodeError::Custom { .. }))) => (Err(e), dirty),
            Err(Ok(e)) => (Err(e), true),
            Err(Err(Stop::Time)) => (
                Err(CodeError::Limit(format!(
                    "the code ran longer than {} ms",
                    self.limits.timeout.as_millis()
                ))),
                true,
            ),
            Err(Err(Stop::Memory)) => (
                Err(CodeError::Limit(format!(
                    "the code used more than {} MiB",
                    self.limits.memory >> 20
                ))),
                true,
            ),
        }
    }
}
