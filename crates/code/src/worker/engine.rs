//! One QuickJS runtime and what a call does on it: a fresh context per call (nothing one call
//! defines is seen by the next), the prelude of globals, the CommonJS module, a small event
//! loop for promises and timers, and the limits — an interrupt handler for CPU time, a deadline
//! for the whole call, the runtime's memory limit, and the size of the result.
//!
//! The engine's parts: making it (`start.rs`), the context of the next call made ahead
//! (`context.rs`), a call and the limits it answers to (`run.rs`), and the call inside its
//! context: the request, the module, timers, the result (`invoke.rs`).

mod context;
mod invoke;
mod run;
mod start;
#[cfg(test)]
mod tests;

use std::cell::{Cell, RefCell};
use std::ptr::NonNull;
use std::rc::Rc;
use std::time::{Duration, Instant};

use rquickjs::{Context, Function, Persistent, Runtime, qjs};
use serde_json::Value as Json;

use super::budget::Meter;
use super::code_cache::CodeCache;
use super::host_calls::CallState;
pub(crate) use super::host_calls::Host;
use super::names::Names;
use crate::packages::ModuleStore;

/// One call: the module and the request it is called with.
pub struct Call<'a> {
    /// The tenant whose code it is (its compiled module is kept for its own calls only).
    pub tenant: uuid::Uuid,
    /// The module's source.
    pub code: &'a str,
    /// The request object.
    pub request: &'a Json,
    /// Whether `req.svc` is a client.
    pub svc: bool,
    /// Only compile the module (as a call would), run nothing: `true` when it compiles.
    pub check: bool,
}

/// Limits of every call.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Wall-clock time of a whole call, timers included.
    pub timeout: Duration,
    /// Memory of the runtime, in bytes.
    pub memory: usize,
    /// Largest result, as JSON text, in bytes.
    pub max_output: usize,
}

const PRELUDE: &str = include_str!("prelude.js");

/// A fresh context with the prelude evaluated, waiting for its one call.
struct Prepared {
    // Declared before `context`: these handles are released before the context is.
    run: Persistent<Function<'static>>,
    svc: Persistent<Function<'static>>,
    fire: Persistent<Function<'static>>,
    context: Context,
}

/// A runtime reused by the calls of one worker thread.
pub struct Engine {
    // Declared before `runtime`: released before it.
    prepared: Option<Prepared>,
    /// The context of the call that just ended, until `finish`.
    spent: Option<Prepared>,
    /// The names every context is made of, kept between calls (`names.rs`).
    names: Option<Names>,
    runtime: Runtime,
    /// `runtime`'s own pointer, for making contexts (`intrinsics.rs`).
    raw: NonNull<qjs::JSRuntime>,
    /// The prelude module as QuickJS bytecode: loading it is about five times cheaper than
    /// parsing it again for every context.
    prelude: Rc<Vec<u8>>,
    /// The modules of [`MODULES`](crate::node::MODULES) as bytecode, loaded into a context on
    /// first use.
    builtins: Rc<Vec<(&'static str, Vec<u8>)>>,
    /// The tenants' modules this worker compiled (`code_cache.rs`), kept across runtimes.
    code_cache: Rc<RefCell<CodeCache>>,
    state: Rc<CallState>,
    host: Rc<dyn Host>,
    /// The operator's npm packages.
    modules: Rc<ModuleStore>,
    /// What the runtime's allocator saw: whether it refused memory.
    meter: Rc<Meter>,
    deadline: Rc<Cell<Option<Instant>>>,
    limits: Limits,
    /// What the runtime holds between calls, as `new` left it.
    baseline: usize,
}

/// How much more than its baseline a runtime may hold between calls. QuickJS never shrinks its
/// atom and shape tables, so code that made a great many names or shapes would leave every later
/// call less of its memory limit; past this the runtime is replaced.
const MAX_GROWTH: usize = 1 << 20;
