//! One QuickJS runtime and what a call does on it: a fresh context per call (nothing one call
//! defines is seen by the next), the prelude of globals, the CommonJS module, a small event
//! loop for promises and timers, and the limits — an interrupt handler for CPU time, a deadline
//! for the whole call, the runtime's memory limit, and the size of the result.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, Function, Module, Object, Persistent, Runtime,
    Value, WriteOptions,
};
use serde_json::Value as Json;
use tokenvault_domain::code::CodeError;

/// What the code reaches outside its context: `req.svc` and `console`. In a worker process
/// both go over the channel to the server, which checks them.
pub trait Host {
    /// A `req.svc` call; `{"ok": …}` or `{"error": <problem>}`.
    fn svc(&self, method: String, args: Vec<Json>) -> Json;
    /// An outbound request (`fetch`); `{"ok": {status, headers, body}}` or `{"error": why}`.
    fn fetch(&self, request: Json) -> Json;
    /// A `console.*` line, already bounded.
    fn log(&self, level: &str, text: &str);
}

/// One call: the module and the request it is called with.
pub struct Call<'a> {
    /// The module's source.
    pub code: &'a str,
    /// The request object.
    pub request: &'a Json,
    /// Whether `req.svc` is a client.
    pub svc: bool,
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

/// The modules the prelude loads into a context when its code first needs them, by name: the
/// globals (an ES module), and the built-in modules of `require` (CommonJS, see
/// [`common_js`]; `node/LICENSES.md` says where each comes from).
const BUILTINS: &[(&str, Source)] = &[
    ("globals", Source::Es(include_str!("globals.js"))),
    ("buffer", Source::CommonJs(include_str!("node/buffer.js"))),
    (
        "base64-js",
        Source::CommonJs(include_str!("node/base64-js.js")),
    ),
    ("ieee754", Source::CommonJs(include_str!("node/ieee754.js"))),
    ("crypto", Source::CommonJs(include_str!("node/crypto.js"))),
    ("events", Source::CommonJs(include_str!("node/events.js"))),
    ("process", Source::CommonJs(include_str!("node/process.js"))),
    (
        "querystring",
        Source::CommonJs(include_str!("node/querystring.js")),
    ),
    (
        "qs-decode",
        Source::CommonJs(include_str!("node/qs-decode.js")),
    ),
    (
        "qs-encode",
        Source::CommonJs(include_str!("node/qs-encode.js")),
    ),
    (
        "string_decoder",
        Source::CommonJs(include_str!("node/string_decoder.js")),
    ),
    ("fetch", Source::CommonJs(include_str!("node/fetch.js"))),
    ("http-core", Source::CommonJs(include_str!("node/http.js"))),
    ("url", Source::CommonJs(include_str!("node/url.js"))),
    ("util", Source::CommonJs(include_str!("node/util.js"))),
];

/// A built-in module's source.
enum Source {
    /// An ES module whose default export the prelude calls.
    Es(&'static str),
    /// A CommonJS module, compiled as [`common_js`] wraps it.
    CommonJs(&'static str),
}

/// A CommonJS module as an ES module whose default export is the function Node.js would wrap
/// it in (`exports`, `require`, `module`) and the worker's host functions. The body runs in
/// strict mode (an ES module's), which every built-in module is written for.
fn common_js(source: &str) -> String {
    format!("export default function (exports, require, module, host) {{\n{source}\n}}\n")
}

/// The longest `console` line kept (characters).
const MAX_LOG_LINE: usize = 4096;
/// The most `console` lines one call writes to the log.
const MAX_LOG_LINES: usize = 200;

/// What the host functions of a context read: set at the start of each call, so that a context
/// can be prepared before the call it will serve is known.
#[derive(Default)]
struct CallState {
    lines: Cell<usize>,
    /// The timers the code set: id and when each is due.
    timers: RefCell<Vec<(i32, Instant)>>,
}

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
    runtime: Runtime,
    /// The prelude module as QuickJS bytecode: loading it is about five times cheaper than
    /// parsing it again for every context.
    prelude: Vec<u8>,
    /// The modules of [`BUILTINS`] as bytecode, loaded into a context on first use.
    builtins: Rc<Vec<(&'static str, Vec<u8>)>>,
    state: Rc<CallState>,
    host: Rc<dyn Host>,
    deadline: Rc<Cell<Option<Instant>>>,
    limits: Limits,
}

/// What ended a call that did not return.
enum Stop {
    Time,
    Memory,
}

impl Engine {
    /// A runtime with the memory limit and the interrupt handler installed, and the prelude
    /// compiled.
    pub fn new(limits: Limits, host: Rc<dyn Host>) -> Result<Self, String> {
        let runtime = Runtime::new().map_err(|e| e.to_string())?;
        runtime.set_memory_limit(limits.memory);
        runtime.set_max_stack_size(512 * 1024);
        let deadline: Rc<Cell<Option<Instant>>> = Rc::new(Cell::new(None));
        let due = deadline.clone();
        runtime.set_interrupt_handler(Some(Box::new(move || {
            due.get().is_some_and(|at| Instant::now() >= at)
        })));
        let (prelude, builtins) = {
            let context = Context::full(&runtime).map_err(|e| e.to_string())?;
            context.with(|ctx| {
                let compile = |name: &str, source: &str| {
                    Module::declare(ctx.clone(), format!("tokenvault:{name}"), source)
                        .catch(&ctx)
                        .map_err(|e| caught_message(&e))?
                        .write(WriteOptions::default())
                        .map_err(|e| e.to_string())
                };
                let prelude = compile("prelude", PRELUDE)?;
                let builtins = BUILTINS
                    .iter()
                    .map(|(name, source)| {
                        let bytes = match source {
                            Source::Es(text) => compile(name, text)?,
                            Source::CommonJs(text) => compile(name, &common_js(text))?,
                        };
                        Ok((*name, bytes))
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                Ok::<_, String>((prelude, Rc::new(builtins)))
            })?
        };
        runtime.run_gc();
        Ok(Self {
            prepared: None,
            spent: None,
            runtime,
            prelude,
            builtins,
            state: Rc::default(),
            host,
            deadline,
            limits,
        })
    }

    /// Makes the context of the next call ready (a fresh context, the host functions, the
    /// prelude), so a call does not wait for it. Does nothing when one is ready.
    pub fn prepare(&mut self) -> Result<(), String> {
        if self.prepared.is_some() {
            return Ok(());
        }
        let context = Context::full(&self.runtime).map_err(|e| e.to_string())?;
        let (run, svc, fire) = context.with(|ctx| {
            install_host(&ctx, &self.state, &self.host).map_err(|e| e.to_string())?;
            install_builtins(&ctx, &self.builtins).map_err(|e| e.to_string())?;
            crate::hash::install(&ctx).map_err(|e| e.to_string())?;
            crate::url::install(&ctx).map_err(|e| e.to_string())?;
            crate::cipher::install(&ctx).map_err(|e| e.to_string())?;
            crate::sign::install(&ctx).map_err(|e| e.to_string())?;
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
    /// that never ends, a finalizer) would run in the next tenant's call.
    pub fn finish(&mut self) -> bool {
        if self.spent.take().is_none() {
            return false;
        }
        self.state.timers.borrow_mut().clear();
        self.runtime.run_gc();
        self.runtime.is_job_pending()
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
        let request = ctx.json_parse(call.request.to_string()).map_err(internal)?;
        if let (true, Some(object)) = (call.svc, request.as_object()) {
            let host = svc_host(ctx, self.host.clone()).map_err(internal)?;
            let build = prepared.svc.clone().restore(ctx).map_err(internal)?;
            let client: Value = build.call((host,)).map_err(internal)?;
            object.set("svc", client.clone()).map_err(internal)?;
            object.set("bt", client).map_err(internal)?;
        }
        let run = prepared.run.clone().restore(ctx).map_err(internal)?;
        let returned: Value = run
            .call((call.code, request))
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

/// What a caught exception means: a limit (time, memory), or the code's own error.
fn failure<'js>(
    ctx: &Ctx<'js>,
    caught: &CaughtError<'js>,
    deadline: Instant,
) -> Result<CodeError, Stop> {
    if Instant::now() >= deadline {
        return Err(Stop::Time);
    }
    let message = caught_message(caught);
    if is_out_of_memory(caught, &message) {
        return Err(Stop::Memory);
    }
    let value = match caught {
        CaughtError::Exception(e) => Some(e.as_value().clone()),
        CaughtError::Value(v) => Some(v.clone()),
        CaughtError::Error(_) => None,
    };
    if message.len() > MAX_THROWN {
        return Ok(thrown_too_large());
    }
    Ok(value
        .and_then(|v| thrown(ctx, &v, &message))
        .unwrap_or(CodeError::Thrown {
            status: 500,
            message,
            errors: None,
        }))
}

/// Whether `caught` is the engine's own out-of-memory error: an `InternalError` whose message is
/// exactly that. (An `Error('out of memory')` the code throws is its own error. The engine's
/// error carries no mark code could not copy through a caught `InternalError`'s constructor; a
/// call that does so only reports its own failure as the memory limit.)
fn is_out_of_memory(caught: &CaughtError<'_>, message: &str) -> bool {
    let CaughtError::Exception(e) = caught else {
        return false;
    };
    message == "out of memory"
        && e.as_object()
            .get::<_, String>("name")
            .is_ok_and(|name| name == "InternalError")
}

/// The largest error a call may throw (its message and `errors`, or a custom response's headers
/// and body), as JSON text: checked here, before anything leaves the worker.
const MAX_THROWN: usize = 1 << 20;

/// The longest compiler message passed on (characters).
const MAX_COMPILE_MESSAGE: usize = 1000;

fn thrown_too_large() -> CodeError {
    CodeError::Limit("the error the code threw is larger than 1 MiB".into())
}

/// Maps a thrown object of one of the prelude's classes to its status and `errors`.
fn thrown<'js>(ctx: &Ctx<'js>, value: &Value<'js>, message: &str) -> Option<CodeError> {
    let object: &Object = value.as_object()?;
    if let Ok(why) = object.get::<_, String>("__tokenvault_compile") {
        let why: String = why.chars().take(MAX_COMPILE_MESSAGE).collect();
        return Some(CodeError::Compile(why));
    }
    if let Ok(custom) = object.get::<_, Object>("__tokenvault_custom") {
        let status: f64 = custom.get("status").unwrap_or(500.0);
        let headers: Value = custom.get("headers").ok()?;
        let body: Value = custom.get("body").ok()?;
        let (Ok(headers), Ok(body)) = (json_of(ctx, headers), json_of(ctx, body)) else {
            return Some(thrown_too_large());
        };
        return Some(CodeError::Custom {
            status: status_code(status),
            headers: headers.unwrap_or(Json::Null),
            body: body.unwrap_or(Json::Null),
        });
    }
    let status: f64 = object.get("__tokenvault_status").ok()?;
    let errors = match object.get::<_, Value>("errors") {
        Ok(e) if !e.is_undefined() => match json_of(ctx, e) {
            Ok(errors) => errors,
            Err(()) => return Some(thrown_too_large()),
        },
        _ => None,
    };
    Some(CodeError::Thrown {
        status: status_code(status),
        message: message.to_string(),
        errors,
    })
}

fn status_code(status: f64) -> u16 {
    if status.is_finite() && (100.0..=599.0).contains(&status) {
        // In range: the cast keeps the value.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let code = status as u16;
        code
    } else {
        500
    }
}

/// The JSON of `value`; `Err` when its text is larger than [`MAX_THROWN`] (never parsed).
fn json_of<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> Result<Option<Json>, ()> {
    let Some(text) = ctx
        .json_stringify(value)
        .ok()
        .flatten()
        .and_then(|t| t.to_string().ok())
    else {
        return Ok(None);
    };
    if text.len() > MAX_THROWN {
        return Err(());
    }
    Ok(serde_json::from_str(&text).ok())
}

fn caught_message(caught: &CaughtError<'_>) -> String {
    match caught {
        CaughtError::Exception(e) => e.message().unwrap_or_else(|| "error".into()),
        CaughtError::Value(v) => v
            .as_string()
            .and_then(|s| s.to_string().ok())
            .unwrap_or_else(|| "a non-Error value was thrown".into()),
        CaughtError::Error(e) => e.to_string(),
    }
}

/// The host functions the prelude wraps: a log line, a UUID, and timers kept by the host. They
/// read the call they serve from `state`.
fn install_host(ctx: &Ctx<'_>, state: &Rc<CallState>, host: &Rc<dyn Host>) -> rquickjs::Result<()> {
    let globals = ctx.globals();
    let log = state.clone();
    let to = host.clone();
    globals.set(
        "__log",
        Function::new(ctx.clone(), move |level: String, text: String| {
            // At debug, escaped (no forged lines), at most 4 KiB a line and 200 lines a call.
            log.lines.set(log.lines.get() + 1);
            if log.lines.get() > MAX_LOG_LINES {
                return;
            }
            let text: String = text.chars().take(MAX_LOG_LINE).collect();
            to.log(&level, &text);
        })?,
    )?;
    globals.set(
        "__uuid",
        Function::new(ctx.clone(), || uuid::Uuid::new_v4().to_string())?,
    )?;
    let set = state.clone();
    globals.set(
        "__setTimer",
        Function::new(ctx.clone(), move |id: i32, ms: f64| {
            let ms = if ms.is_finite() {
                ms.clamp(0.0, 1e12)
            } else {
                0.0
            };
            let at = Instant::now() + Duration::from_secs_f64(ms / 1000.0);
            set.timers.borrow_mut().push((id, at));
        })?,
    )?;
    let out = host.clone();
    globals.set(
        "__fetch",
        Function::new(ctx.clone(), move |request: String| -> String {
            // What one request may carry is bounded here, before it leaves the worker.
            if request.len() > MAX_FETCH_REQUEST {
                return serde_json::json!({"error": "a request is limited to 2 MiB"}).to_string();
            }
            let Ok(request) = serde_json::from_str::<Json>(&request) else {
                return serde_json::json!({"error": "the request is not JSON"}).to_string();
            };
            out.fetch(request).to_string()
        })?,
    )?;
    let clear = state.clone();
    globals.set(
        "__clearTimer",
        Function::new(ctx.clone(), move |id: i32| {
            clear.timers.borrow_mut().retain(|(t, _)| *t != id);
        })?,
    )?;
    Ok(())
}

/// `__builtin(name)`: loads the module `name` of [`BUILTINS`] into this context (the prelude
/// calls it at most once per name and context) and answers its default export.
fn install_builtins<'js>(
    ctx: &Ctx<'js>,
    builtins: &Rc<Vec<(&'static str, Vec<u8>)>>,
) -> rquickjs::Result<()> {
    let builtins = builtins.clone();
    ctx.globals().set(
        "__builtin",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, name: String| -> rquickjs::Result<Value<'js>> {
                let Some((_, bytes)) = builtins.iter().find(|(n, _)| *n == name) else {
                    return Err(rquickjs::Exception::throw_reference(
                        &ctx,
                        "no such builtin",
                    ));
                };
                // SAFETY: the bytes are what `Module::write` of this same QuickJS build produced in
                // `Engine::new`, never anything read from outside the process.
                #[allow(unsafe_code)]
                let module = unsafe { Module::load(ctx.clone(), bytes) }?;
                let (module, promise) = module.eval()?;
                promise.finish::<()>()?;
                module.get("default")
            },
        )?,
    )
}

/// The largest outbound request (`fetch`), as the JSON text the worker sends (the body in
/// base64): within the server's bound on a frame from a worker.
const MAX_FETCH_REQUEST: usize = 3 << 20;

/// The largest arguments of one `req.svc` call, as JSON text.
const MAX_SVC_ARGS: usize = 2 << 20;

/// The host side of `req.svc`: the host answers it (the worker asks the server and blocks; its
/// JavaScript waits anyway). The server bounds the call by the call's deadline.
fn svc_host<'js>(ctx: &Ctx<'js>, host: Rc<dyn Host>) -> rquickjs::Result<Function<'js>> {
    Function::new(ctx.clone(), move |method: String, args: String| -> String {
        // What one call may ask of the server is bounded here, before it leaves the worker:
        // the HTTP API's own body limit, with room for the method's other arguments.
        if args.len() > MAX_SVC_ARGS || method.len() > 64 {
            return serde_json::json!({"error": {"status": 413, "title": "Payload Too Large",
                "detail": "the arguments of a svc call are limited to 2 MiB"}})
            .to_string();
        }
        let args: Vec<Json> = serde_json::from_str(&args).unwrap_or_default();
        host.svc(method, args).to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> Engine {
        let limits = Limits {
            timeout: Duration::from_secs(2),
            memory: 16 << 20,
            max_output: 1 << 20,
        };
        Engine::new(limits, Rc::new(NoHost)).unwrap_or_else(|e| panic!("{e}"))
    }

    struct NoHost;

    impl Host for NoHost {
        fn svc(&self, _: String, _: Vec<Json>) -> Json {
            serde_json::json!({"error": {"status": 500}})
        }
        fn fetch(&self, request: Json) -> Json {
            // Echoes the request back as the answer's body, as JSON.
            use base64::Engine as _;
            let body = base64::engine::general_purpose::STANDARD.encode(request.to_string());
            serde_json::json!({"ok": {"status": 201, "headers": [["x-echo", "1"]], "body": body}})
        }
        fn log(&self, _: &str, _: &str) {}
    }

    const EMPTY: Json = Json::Null;

    fn call(code: &str) -> Call<'_> {
        Call {
            code,
            request: &EMPTY,
            svc: false,
        }
    }

    /// Mapping an error can itself throw (a `BigInt` in `errors`, a throwing `message` getter);
    /// the exception it leaves is per runtime and would keep the spent context alive into the
    /// next call. The call clears it and the runtime is not reused.
    #[test]
    fn an_exception_left_by_error_mapping_costs_the_runtime() {
        for code in [
            "module.exports = () => { throw new BadRequestError({ amount: 10n }); };",
            "module.exports = () => { const e = new Error('x'); \
             Object.defineProperty(e, 'message', { get() { throw { leak: globalThis }; } }); throw e; };",
        ] {
            let mut engine = engine();
            let (outcome, discard) = engine.run(&call(code));
            assert!(outcome.is_err(), "{code}");
            assert!(discard, "{code}");
        }
        // Words are not a limit: a thrown "out of memory" is the code's own error.
        let mut forged = engine();
        let (outcome, _) = forged.run(&call(
            "module.exports = () => { throw new Error('out of memory'); };",
        ));
        assert!(
            matches!(&outcome, Err(CodeError::Thrown { status: 500, message, .. }) if message == "out of memory"),
            "{outcome:?}"
        );
        // A plain throw keeps it.
        let mut engine = engine();
        let (outcome, discard) = engine.run(&call(
            "module.exports = () => { throw new BadRequestError('no'); };",
        ));
        assert!(matches!(
            outcome,
            Err(CodeError::Thrown { status: 400, .. })
        ));
        assert!(!discard);
        assert!(!engine.finish());
    }

    /// The globals are made on first use (prelude.js): every listed name is there when read,
    /// whatever the spelling of the read, can be replaced, and behaves as if made up front.
    #[test]
    fn globals_made_on_first_use_behave_as_made_up_front() {
        let mut engine = engine();
        let (outcome, _) = engine.run(&call(
            "module.exports = async () => {
               // The host's timer callback is not a global: replacing the name changes nothing.
               globalThis.__fireTimer = 5;
               const seen = [typeof console.log, typeof setTimeout, typeof clearTimeout,
                 typeof crypto.randomUUID, typeof TextEncoder, typeof globalThis.TextDecoder,
                 'BadRequestError' in globalThis, typeof globalThis['CustomHttpResponseError'],
                 typeof NoSuchGlobal];
               const bytes = new TextEncoder().encode('zürich');
               const back = new TextDecoder().decode(bytes);
               const fired = await new Promise((resolve) => setTimeout(resolve, 1, 'fired'));
               const cleared = setTimeout(() => { throw new Error('cleared timer ran'); }, 1);
               clearTimeout(cleared);
               RateLimitError = 'replaced';
               let missing;
               try { missing = NoSuchGlobal; } catch (e) { missing = e.name; }
               return { seen, length: bytes.length, back, fired, replaced: RateLimitError, missing,
                        uuid: crypto.randomUUID().length };
             };",
        ));
        let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            value,
            serde_json::json!({
                "seen": ["function", "function", "function", "function", "function", "function",
                         true, "function", "undefined"],
                "length": 7, "back": "zürich", "fired": "fired", "replaced": "replaced",
                "missing": "ReferenceError", "uuid": 36
            })
        );
        assert!(!engine.finish());
        // A class made on first use still maps to its status.
        let (outcome, _) = engine.run(&call(
            "module.exports = () => { throw new AuthorizationError({ why: 'no' }); };",
        ));
        assert!(
            matches!(&outcome, Err(CodeError::Thrown { status: 403, errors: Some(e), .. }) if e["why"] == "no"),
            "{outcome:?}"
        );
    }

    /// Node's built-in modules compute real results (values computed outside the engine: RFC
    /// 4231-style HMAC and FIPS 180 digests, base64 both ways).
    #[test]
    fn node_modules_compute_real_values() {
        let mut engine = engine();
        let (outcome, _) = engine.run(&call(
            r"const crypto = require('crypto');
               const { Buffer: B } = require('node:buffer');
               const EventEmitter = require('events');
               const qs = require('querystring');
               const util = require('util');
               const { StringDecoder } = require('string_decoder');
               const sdk = require('@basis-theory/basis-theory-reactor-formulas-sdk-js');
               const topThis = this === module.exports;
               module.exports = async function (req) {
                 const emitter = new EventEmitter();
                 let heard = null;
                 emitter.on('x', (v) => { heard = v; });
                 emitter.emit('x', 42);
                 const decoder = new StringDecoder('utf8');
                 const euro = Buffer.from('€');
                 const split = decoder.write(euro.slice(0, 1)) + decoder.write(euro.slice(1));
                 let ticks = 0;
                 await new Promise((resolve) => {
                   const id = setInterval(() => { ticks += 1; if (ticks === 3) { clearInterval(id); resolve(); } }, 1);
                 });
                 await new Promise((resolve) => setImmediate(resolve));
                 const notFound = [];
                 for (const name of ['fs', 'child_process', 'base64-js', 'node:net']) {
                   try { require(name); notFound.push('found ' + name); } catch (e) { notFound.push(e.message); }
                 }
                 const copy = structuredClone({ when: new Date(0), seen: new Map([[1, 'a']]) });
                 return {
                   hmac: crypto.createHmac('sha256', 'key').update('message').digest('hex'),
                   sha256: crypto.createHash('sha256').update('a').update(B.from('bc')).digest('hex'),
                   md5: crypto.createHash('md5').update('').digest('base64'),
                   random: crypto.randomBytes(16).length,
                   randomDiffers: crypto.randomBytes(8).toString('hex') !== crypto.randomBytes(8).toString('hex'),
                   safe: [crypto.timingSafeEqual(B.from('ab'), B.from('ab')), crypto.timingSafeEqual(B.from('ab'), B.from('ac'))],
                   base64: Buffer.from('hello').toString('base64'),
                   back: Buffer.from('aGVsbG8=', 'base64').toString(),
                   hex: Buffer.from([1, 255]).toString('hex'),
                   heard, split, ticks,
                   qs: qs.stringify({ a: 'x y', b: ['1', '2'] }),
                   parsed: qs.parse('a=x%20y&b=1&b=2'),
                   format: util.format('%s=%d %j', 'a', 5, { b: 1 }),
                   env: process.env, version: process.version,
                   global: global === globalThis,
                   uuid: crypto.randomUUID().length,
                   notFound,
                   clone: [copy.when instanceof Date, copy.seen.get(1)],
                   sdk: sdk.BadRequestError === BadRequestError && new sdk.InvalidReactorFormulaError('x').status,
                   topThis,
                 };
               };",
        ));
        let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            value,
            serde_json::json!({
                "hmac": "6e9ef29b75fffc5b7abae527d58fdadb2fe42e7219011976917343065f58ed4a",
                "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
                "md5": "1B2M2Y8AsgTpgAmY7PhCfg==",
                "random": 16, "randomDiffers": true, "safe": [true, false],
                "base64": "aGVsbG8=", "back": "hello", "hex": "01ff",
                "heard": 42, "split": "€", "ticks": 3,
                "qs": "a=x%20y&b=1&b=2",
                "parsed": {"a": "x y", "b": ["1", "2"]},
                "format": "a=5 {\"b\":1}",
                "env": {}, "version": "v16.20.2", "global": true, "uuid": 36,
                "notFound": ["Cannot find module 'fs'", "Cannot find module 'child_process'",
                             "Cannot find module 'base64-js'", "Cannot find module 'node:net'"],
                "clone": [true, "a"], "sdk": 422, "topThis": true
            })
        );
        assert!(!engine.finish());
    }

    /// A module that is not there fails the call with a 500 naming it, at load or in the
    /// handler.
    #[test]
    fn a_missing_module_is_a_500_naming_it() {
        for code in [
            "const fs = require('fs'); module.exports = () => 1;",
            "module.exports = () => require('left-pad')('x', 3);",
        ] {
            let mut engine = engine();
            let (outcome, _) = engine.run(&call(code));
            assert!(
                matches!(&outcome, Err(CodeError::Thrown { status: 500, message, .. })
                    if message.starts_with("Cannot find module '")),
                "{code}: {outcome:?}"
            );
        }
    }

    /// `URL` and `url` read URLs as Node.js does (the host's WHATWG parser).
    #[test]
    fn urls_are_built_and_read_back() {
        let mut engine = engine();
        let (outcome, _) = engine.run(&call(
            "const url = require('url');
             module.exports = () => {
               const u = new URL('/v1/charges?amount=10#top', 'https://api.example.com:8443');
               u.searchParams.append('currency', 'eur');
               u.pathname = '/v2/charges';
               let invalid = null;
               try { new URL('not a url'); } catch (e) { invalid = e.name; }
               const legacy = url.parse('https://user:pw@host.example/a/b?x=1&y=2#h', true);
               const params = new URLSearchParams({ a: '1 2', b: 'é' });
               return {
                 href: u.href, host: u.host, hostname: u.hostname, port: u.port,
                 origin: u.origin, search: u.search, hash: u.hash, protocol: u.protocol,
                 amount: u.searchParams.get('amount'), invalid, json: JSON.stringify({ u }),
                 legacy: [legacy.hostname, legacy.pathname, legacy.query.y, legacy.auth, legacy.path],
                 params: params.toString(),
                 formatted: url.format({ protocol: 'https', hostname: 'x.example', pathname: '/p', query: { q: 'a b' } }),
                 resolved: url.resolve('https://x.example/a/b', '../c'),
                 same: URL === url.URL,
               };
             };",
        ));
        let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            value,
            serde_json::json!({
                "href": "https://api.example.com:8443/v2/charges?amount=10&currency=eur#top",
                "host": "api.example.com:8443", "hostname": "api.example.com", "port": "8443",
                "origin": "https://api.example.com:8443", "search": "?amount=10&currency=eur",
                "hash": "#top", "protocol": "https:", "amount": "10", "invalid": "TypeError",
                "json": "{\"u\":\"https://api.example.com:8443/v2/charges?amount=10&currency=eur#top\"}",
                "legacy": ["host.example", "/a/b", "2", "user:pw", "/a/b?x=1&y=2"],
                "params": "a=1+2&b=%C3%A9",
                "formatted": "https://x.example/p?q=a%20b",
                "resolved": "https://x.example/c",
                "same": true
            })
        );
    }

    /// `fetch` goes to the host as JSON (the body in base64) and its answer comes back as a
    /// `Response`; `Headers` and `Request` are there.
    #[test]
    fn fetch_goes_through_the_host() {
        let mut engine = engine();
        let (outcome, _) = engine.run(&call(
            "module.exports = async () => {
               const res = await fetch('https://api.example/v1/charges', {
                 method: 'post', headers: { 'Content-Type': 'application/json', 'X-Key': 'k' },
                 body: JSON.stringify({ amount: 1 }),
               });
               const sent = await res.json();
               const body = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(sent.body), (c) => c.charCodeAt(0))));
               return { status: res.status, ok: res.ok, echo: res.headers.get('X-Echo'),
                        method: sent.method, url: sent.url, headers: sent.headers, body,
                        request: new Request('https://x.example/a').method, h: new Headers({ A: '1' }).get('a') };
             };",
        ));
        let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            value,
            serde_json::json!({
                "status": 201, "ok": true, "echo": "1", "method": "POST",
                "url": "https://api.example/v1/charges",
                "headers": [["content-type", "application/json"], ["x-key", "k"]],
                "body": {"amount": 1}, "request": "GET", "h": "1"
            })
        );
    }

    /// Node's `https.request` goes through the same host call as `fetch`: the request as
    /// written (method, headers, body), the answer as events.
    #[test]
    fn https_request_goes_through_the_host() {
        use base64::Engine as _;
        let mut engine = engine();
        let (outcome, _) = engine.run(&call(
            "const https = require('https');
             module.exports = () => new Promise((resolve, reject) => {
               const req = https.request({ hostname: 'api.example', path: '/v1/x?y=1', method: 'PUT',
                                           headers: { 'Content-Type': 'application/json' } }, (res) => {
                 let text = '';
                 res.setEncoding('utf8');
                 res.on('data', (c) => { text += c; });
                 res.on('end', () => resolve({ status: res.statusCode, echo: res.headers['x-echo'], sent: JSON.parse(text) }));
               });
               req.on('error', reject);
               req.write('{\"a\":');
               req.end('1}');
             });",
        ));
        let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(value["status"], 201, "{value}");
        assert_eq!(value["echo"], "1");
        assert_eq!(value["sent"]["method"], "PUT");
        assert_eq!(value["sent"]["url"], "https://api.example/v1/x?y=1");
        let body = base64::engine::general_purpose::STANDARD
            .decode(value["sent"]["body"].as_str().unwrap_or_default())
            .unwrap_or_default();
        assert_eq!(body, br#"{"a":1}"#);
    }

    /// Node's ciphers give the published answers (NIST SP 800-38A CBC, the GCM spec's test
    /// case 2) and round-trip; a changed tag does not authenticate.
    #[test]
    fn node_ciphers_give_published_answers() {
        let mut engine = engine();
        let (outcome, _) = engine.run(&call(
            "const crypto = require('crypto');
             module.exports = () => {
               const cbc = crypto.createCipheriv('aes-128-cbc', Buffer.from('2b7e151628aed2a6abf7158809cf4f3c', 'hex'),
                                                 Buffer.from('000102030405060708090a0b0c0d0e0f', 'hex'));
               cbc.setAutoPadding(false);
               const cbcHex = cbc.update(Buffer.from('6bc1bee22e409f96e93d7e117393172a', 'hex'), undefined, 'hex') + cbc.final('hex');
               const zero = Buffer.alloc(16);
               const gcm = crypto.createCipheriv('aes-128-gcm', zero, Buffer.alloc(12));
               const sealed = Buffer.concat([gcm.update(zero), gcm.final()]);
               const tag = gcm.getAuthTag();
               const key = crypto.randomBytes(32);
               const iv = crypto.randomBytes(12);
               const e = crypto.createCipheriv('aes-256-gcm', key, iv);
               e.setAAD(Buffer.from('header'));
               const ct = Buffer.concat([e.update('4242424242424242', 'utf8'), e.final()]);
               const d = crypto.createDecipheriv('aes-256-gcm', key, iv);
               d.setAAD(Buffer.from('header'));
               d.setAuthTag(e.getAuthTag());
               const back = d.update(ct, undefined, 'utf8') + d.final('utf8');
               const bad = crypto.createDecipheriv('aes-256-gcm', key, iv);
               const t = Buffer.from(e.getAuthTag()); t[0] ^= 1;
               bad.setAuthTag(t);
               bad.update(ct);
               let refused = null;
               try { bad.final(); } catch (err) { refused = err.message; }
               const k = crypto.randomBytes(32), v = crypto.randomBytes(16);
               const c2 = crypto.createCipheriv('aes-256-cbc', k, v);
               const padded = c2.update('hello', 'utf8', 'base64') + c2.final('base64');
               const d2 = crypto.createDecipheriv('aes-256-cbc', k, v);
               const cbcBack = d2.update(padded, 'base64', 'utf8') + d2.final('utf8');
               return { cbcHex, gcm: sealed.toString('hex'), tag: tag.toString('hex'), back, refused, cbcBack };
             };",
        ));
        let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            value,
            serde_json::json!({
                "cbcHex": "7649abac8119b246cee98e9b12e9197d",
                "gcm": "0388dace60b6a392f328c2b971b2fe78",
                "tag": "ab6e47d42cec13bdf53a67b21257bddf",
                "back": "4242424242424242",
                "refused": "Unsupported state or unable to authenticate data",
                "cbcBack": "hello"
            })
        );
    }

    /// Node's ECDSA signatures (P-256, SHA-256): what code signs verifies outside the engine
    /// with the public key, what it verifies is checked, and a changed message fails.
    #[test]
    fn node_signatures_verify_outside_the_engine() {
        use base64::Engine as _;
        use p256::ecdsa::signature::Verifier;
        use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
        let key = p256::ecdsa::SigningKey::from_slice(&[7u8; 32]).unwrap_or_else(|e| panic!("{e}"));
        let private = key
            .to_pkcs8_pem(LineEnding::LF)
            .unwrap_or_else(|e| panic!("{e}"));
        let public = key
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap_or_else(|e| panic!("{e}"));
        let code = format!(
            "const crypto = require('crypto');
             const PRIVATE = {private:?};
             const PUBLIC = {public:?};
             module.exports = () => {{
               const signer = crypto.createSign('SHA256');
               signer.update('amount=10&');
               signer.update('currency=eur');
               const signature = signer.sign(PRIVATE, 'base64');
               const ok = crypto.createVerify('SHA256').update('amount=10&currency=eur').verify(PUBLIC, signature, 'base64');
               const changed = crypto.verify('sha256', Buffer.from('amount=99&currency=eur'), PUBLIC, Buffer.from(signature, 'base64'));
               const oneShot = crypto.sign('sha256', Buffer.from('x'), {{ key: PRIVATE }}).length > 0;
               let rsa = null;
               try {{ crypto.createSign('RSA-SHA512').update('x').sign(PRIVATE); }} catch (e) {{ rsa = e.name; }}
               return {{ signature, ok, changed, oneShot, rsa }};
             }};",
            private = private.as_str(),
        );
        let mut engine = engine();
        let (outcome, _) = engine.run(&call(&code));
        let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(value["ok"], true, "{value}");
        assert_eq!(value["changed"], false);
        assert_eq!(value["oneShot"], true);
        assert_eq!(value["rsa"], "TypeError");
        let der = base64::engine::general_purpose::STANDARD
            .decode(value["signature"].as_str().unwrap_or_default())
            .unwrap_or_default();
        let signature = p256::ecdsa::Signature::from_der(&der).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            key.verifying_key()
                .verify(b"amount=10&currency=eur", &signature)
                .is_ok()
        );
    }
}
