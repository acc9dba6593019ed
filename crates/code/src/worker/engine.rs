//! One QuickJS runtime and what a call does on it: a fresh context per call (nothing one call
//! defines is seen by the next), the prelude of globals, the CommonJS module, a small event
//! loop for promises and timers, and the limits — an interrupt handler for CPU time, a deadline
//! for the whole call, the runtime's memory limit, and the size of the result.

use std::cell::{Cell, RefCell};
use std::ptr::NonNull;
use std::rc::Rc;
use std::time::{Duration, Instant};

use rquickjs::{
    CatchResultExt, Context, Ctx, Function, Module, Object, Persistent, Runtime, Value,
    WriteOptions, qjs,
};
use serde_json::Value as Json;
use tokenvault_domain::ports::code::CodeError;

use super::budget::{Budgeted, Meter};
use super::builtins::{common_js, install_builtins};
use super::code_cache::CodeCache;
use super::failure::{MAX_COMPILE_MESSAGE, NON_ERROR, Stop, caught_message, failure};
pub(crate) use super::host_calls::Host;
use super::host_calls::{CallState, HostFunctions, svc_host};
use super::intrinsics::{self, Group, LazyIntrinsics};
use super::lazy::{self, LAZY, Made};
use super::names::Names;
use super::script;
use crate::node::{MODULES, Source};
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
    /// The modules of [`MODULES`] as bytecode, loaded into a context on first use.
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

impl Engine {
    /// A runtime with the memory limit and the interrupt handler installed, and the prelude
    /// and built-in modules compiled.
    pub fn new(
        limits: Limits,
        host: Rc<dyn Host>,
        modules: Rc<ModuleStore>,
    ) -> Result<Self, String> {
        Self::start(limits, host, modules, None, Rc::default())
    }

    /// A new runtime in place of this one (for the next call, when this one is not to be
    /// trusted with it), with the bytecode this one compiled.
    pub fn renew(&self) -> Result<Self, String> {
        let compiled = (self.prelude.clone(), self.builtins.clone());
        Self::start(
            self.limits,
            self.host.clone(),
            self.modules.clone(),
            Some(compiled),
            self.code_cache.clone(),
        )
    }

    fn start(
        limits: Limits,
        host: Rc<dyn Host>,
        modules: Rc<ModuleStore>,
        compiled: Option<Compiled>,
        code_cache: Rc<RefCell<CodeCache>>,
    ) -> Result<Self, String> {
        let meter = Rc::new(Meter::default());
        let runtime = Runtime::new_with_alloc(Budgeted::new(meter.clone(), limits.memory))
            .map_err(|e| e.to_string())?;
        runtime.set_max_stack_size(512 * 1024);
        let deadline: Rc<Cell<Option<Instant>>> = Rc::new(Cell::new(None));
        let due = deadline.clone();
        runtime.set_interrupt_handler(Some(Box::new(move || {
            due.get().is_some_and(|at| Instant::now() >= at)
        })));
        let raw = NonNull::new(
            Context::base(&runtime)
                .map_err(|e| e.to_string())?
                .get_runtime_ptr(),
        )
        .ok_or_else(|| "a context without a runtime".to_string())?;
        let (prelude, builtins) = match compiled {
            Some(compiled) => compiled,
            None => compile(&runtime)?,
        };
        runtime.run_gc();
        let mut engine = Self {
            prepared: None,
            spent: None,
            names: None,
            runtime,
            raw,
            prelude,
            builtins,
            code_cache,
            state: Rc::default(),
            host,
            modules,
            meter,
            deadline,
            limits,
            baseline: 0,
        };
        // A context as a call gets it, for its names; then thrown away.
        engine.prepare()?;
        let sample = engine.prepared.take();
        if let Some(sample) = &sample {
            // Its lazy intrinsics added, as a call that uses them has them.
            sample
                .context
                .with(|ctx| ctx.eval::<(), _>("void [ArrayBuffer, Date, Map, WeakRef];"))
                .map_err(|e| e.to_string())?;
            // The prelude's, and those of the vault's own modules a call loads by itself.
            let mut sources = vec![PRELUDE];
            sources.extend(MODULES.iter().filter_map(|module| match module.source {
                Source::Es(text) => Some(text),
                Source::CommonJs(_) => None,
            }));
            engine.names = Some(Names::keep(&sample.context, &sources)?);
        }
        drop(sample);
        engine.runtime.run_gc();
        engine.baseline = engine.meter.used();
        Ok(engine)
    }

    /// Makes the context of the next call ready (a fresh context, the host functions, the
    /// prelude), so a call does not wait for it. Does nothing when one is ready.
    pub fn prepare(&mut self) -> Result<(), String> {
        if self.prepared.is_some() {
            return Ok(());
        }
        let context = intrinsics::context(&self.runtime, self.raw)?;
        let intrinsics = Rc::new(LazyIntrinsics::new(&context));
        let (run, svc, fire) = context.with(|ctx| {
            // The host functions, on one object the prelude takes off the global object (with
            // no prototype: a name it lacks is no lookup in `Object.prototype`, which code can
            // give getters).
            let functions = Object::new(ctx.clone()).map_err(|e| e.to_string())?;
            functions.set_prototype(None).map_err(|e| e.to_string())?;
            // `builtin` only: the rest are made when the first built-in module loads.
            let later = Rc::new(HostFunctions::new(
                self.state.clone(),
                self.host.clone(),
                self.modules.clone(),
            ));
            install_builtins(&ctx, &functions, &self.builtins, &intrinsics, &later)
                .map_err(|e| e.to_string())?;
            ctx.globals()
                .set("__functions", functions)
                .map_err(|e| e.to_string())?;
            let to_host = Object::new(ctx.clone()).map_err(|e| e.to_string())?;
            ctx.globals()
                .set("__host", to_host.clone())
                .map_err(|e| e.to_string())?;
            // SAFETY: the bytes are what `Module::write` of this same QuickJS build produced in
            // `Engine::new`, never anything read from outside the process.
            #[allow(unsafe_code)]
            let module = unsafe { Module::load(ctx.clone(), &self.prelude) };
            let (_module, promise) = module
                .and_then(Module::eval)
                .catch(&ctx)
                .map_err(|e| caught_message(&e))?;
            promise
                .finish::<()>()
                .catch(&ctx)
                .map_err(|e| caught_message(&e))?;
            if ctx.has_exception() {
                return Err("an exception was pending after the prelude".to_string());
            }
            let make: Function = to_host.get("make").map_err(|e| e.to_string())?;
            lazy::install(&ctx, LAZY, &make, Made::Value).map_err(|e| e.to_string())?;
            let add_intrinsics = intrinsics.maker(&ctx).map_err(|e| e.to_string())?;
            for group in Group::ALL {
                lazy::install(&ctx, group.names(), &add_intrinsics, Made::Intrinsic)
                    .map_err(|e| e.to_string())?;
            }
            let run: Function = to_host.get("run").map_err(|e| e.to_string())?;
            let svc: Function = to_host.get("svc").map_err(|e| e.to_string())?;
            let fire: Function = to_host.get("fireTimer").map_err(|e| e.to_string())?;
            Ok::<_, String>((
                Persistent::save(&ctx, run),
                Persistent::save(&ctx, svc),
                Persistent::save(&ctx, fire),
            ))
        })?;
        self.prepared = Some(Prepared {
            run,
            svc,
            fire,
            context,
        });
        Ok(())
    }

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

    fn call_in(
        &self,
        ctx: &Ctx<'_>,
        prepared: &Prepared,
        call: &Call<'_>,
        deadline: Instant,
    ) -> Result<Json, Result<CodeError, Stop>> {
        let internal = |e: rquickjs::Error| Ok(CodeError::Internal(e.to_string()));
        if call.check {
            // Compiled only, never loaded: loading evaluates the wrapper, and a source that
            // closes it early (`}); f(); (function(){`) would run `f` there.
            let compiled = script::compile_module(ctx, call.code);
            if self.meter.refused() {
                drop(ctx.catch());
                return Err(Err(Stop::Memory));
            }
            return compiled.map(|_| Json::Bool(true)).map_err(|why| {
                Ok(CodeError::Compile(
                    why.chars().take(MAX_COMPILE_MESSAGE).collect(),
                ))
            });
        }
        let request = ctx.json_parse(call.request.to_string()).map_err(internal)?;
        if let (true, Some(object)) = (call.svc, request.as_object()) {
            let host = svc_host(ctx, self.host.clone()).map_err(internal)?;
            let build = prepared.svc.clone().restore(ctx).map_err(internal)?;
            let client: Value = build.call((host,)).map_err(internal)?;
            object.set("svc", client.clone()).map_err(internal)?;
            object.set("bt", client).map_err(internal)?;
        }
        let module = self.module(ctx, call, deadline)?;
        let run = prepared.run.clone().restore(ctx).map_err(internal)?;
        let returned: Value = run
            .call((module, request))
            .catch(ctx)
            .map_err(|e| failure(ctx, &e, deadline))?;
        let value = match returned.as_promise() {
            None => returned.clone(),
            Some(promise) => loop {
                match promise.finish::<Value>() {
                    Ok(v) => break v,
                    // The job that was interrupted at the deadline leaves nothing to run.
                    Err(rquickjs::Error::WouldBlock) if Instant::now() >= deadline => {
                        return Err(Err(Stop::Time));
                    }
                    Err(rquickjs::Error::WouldBlock) => {
                        self.fire_next_timer(ctx, prepared, deadline)?;
                    }
                    Err(e) => {
                        return Err(match Err::<(), _>(e).catch(ctx) {
                            Err(caught) => failure(ctx, &caught, deadline),
                            Ok(()) => Ok(CodeError::Internal("no exception".into())),
                        });
                    }
                }
            },
        };
        self.to_json(ctx, value, deadline)
    }

    /// The call's module as a function of `exports`, `require`, `module`, `__filename` and
    /// `__dirname`: loaded from the bytecode this worker compiled from the same tenant's same
    /// text, else compiled (and kept when it compiles).
    fn module<'js>(
        &self,
        ctx: &Ctx<'js>,
        call: &Call<'_>,
        deadline: Instant,
    ) -> Result<Value<'js>, Result<CodeError, Stop>> {
        let cached = self.code_cache.borrow_mut().get(call.tenant, call.code);
        let bytecode = if let Some(bytecode) = cached {
            bytecode
        } else {
            let compiled = script::compile_module(ctx, call.code);
            // Memory refused while compiling or writing (the writer then leaves a gap in its
            // bytes): the call is over its memory limit, and nothing it compiled is kept.
            if self.meter.refused() {
                drop(ctx.catch());
                return Err(Err(Stop::Memory));
            }
            let bytecode = compiled.map_err(|why| {
                Ok(CodeError::Compile(
                    why.chars().take(MAX_COMPILE_MESSAGE).collect(),
                ))
            })?;
            let bytecode = Rc::new(bytecode);
            self.code_cache
                .borrow_mut()
                .put(call.tenant, call.code, bytecode.clone());
            bytecode
        };
        script::load(ctx, &bytecode)
            .catch(ctx)
            .map_err(|e| failure(ctx, &e, deadline))
    }

    /// Waits for the earliest timer (never past the deadline) and runs its callback.
    fn fire_next_timer(
        &self,
        ctx: &Ctx<'_>,
        prepared: &Prepared,
        deadline: Instant,
    ) -> Result<(), Result<CodeError, Stop>> {
        let next = {
            let mut due = self.state.timers.borrow_mut();
            due.sort_by_key(|(_, at)| *at);
            if due.is_empty() {
                None
            } else {
                Some(due.remove(0))
            }
        };
        let Some((id, at)) = next else {
            return Err(Ok(CodeError::Thrown {
                status: 500,
                message: "the promise the code returned never settles".into(),
                errors: None,
            }));
        };
        if at > deadline {
            std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
            return Err(Err(Stop::Time));
        }
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        let fire = prepared
            .fire
            .clone()
            .restore(ctx)
            .map_err(|e| Ok(CodeError::Internal(e.to_string())))?;
        fire.call::<_, ()>((id,))
            .catch(ctx)
            .map_err(|e| failure(ctx, &e, deadline))
    }

    fn to_json<'js>(
        &self,
        ctx: &Ctx<'js>,
        value: Value<'js>,
        deadline: Instant,
    ) -> Result<Json, Result<CodeError, Stop>> {
        let text = ctx
            .json_stringify(value)
            .catch(ctx)
            .map_err(|e| failure(ctx, &e, deadline))?;
        let Some(text) = text else {
            return Ok(Json::Null);
        };
        let text = text
            .to_string()
            .map_err(|e| Ok(CodeError::Internal(e.to_string())))?;
        if text.len() > self.limits.max_output {
            return Err(Ok(CodeError::Limit(format!(
                "the code returned more than {} MiB",
                self.limits.max_output >> 20
            ))));
        }
        serde_json::from_str(&text).map_err(|e| Ok(CodeError::Internal(e.to_string())))
    }
}

/// The prelude and the built-in modules as bytecode, compiled once per worker process.
type Compiled = (Rc<Vec<u8>>, Rc<Vec<(&'static str, Vec<u8>)>>);

/// Compiles the prelude and the built-in modules on `runtime` (bytecode any runtime of this
/// build loads).
fn compile(runtime: &Runtime) -> Result<Compiled, String> {
    let context = Context::full(runtime).map_err(|e| e.to_string())?;
    context.with(|ctx| {
        let compile = |name: &str, source: &str| {
            // The prelude and the svc builder, which every context or every client reads,
            // without their source text (their functions' `toString` shows none, as for a
            // built-in); the modules whose classes code sees (`URL`, `Buffer`, the errors) keep
            // theirs, which packages that tell classes by their source read.
            let strip_source = matches!(name, "prelude" | "svc");
            Module::declare(ctx.clone(), format!("tokenvault:{name}"), source)
                .catch(&ctx)
                .map_err(|e| caught_message(&e))?
                .write(WriteOptions {
                    strip_source,
                    ..WriteOptions::default()
                })
                .map_err(|e| e.to_string())
        };
        let prelude = compile("prelude", PRELUDE)?;
        let builtins = MODULES
            .iter()
            .map(|module| {
                let name = module.name;
                let bytes = match module.source {
                    Source::Es(text) => compile(name, text)?,
                    Source::CommonJs(text) => compile(name, &common_js(text))?,
                };
                Ok((name, bytes))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok::<_, String>((Rc::new(prelude), Rc::new(builtins)))
    })
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
