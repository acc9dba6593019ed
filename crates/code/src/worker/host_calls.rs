//! The host functions of a call's context that reach outside it: `console`, UUIDs, timers,
//! `fetch`, the client packages' and `req.svc`'s calls, each bounded before it leaves the worker.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use rquickjs::{Ctx, Function, Object};
use serde_json::Value as Json;

use super::host_function::host_function;
use crate::packages::ModuleStore;

/// What the code reaches outside its context: `req.svc` and `console`. In a worker process
/// both go over the channel to the server, which checks them.
pub trait Host {
    /// A `req.svc` call, or with `key` a call of a client package built with that key;
    /// `{"ok": …}` or `{"error": <problem>}`.
    fn svc(&self, method: String, args: Vec<Json>, key: Option<String>) -> Json;
    /// An outbound request (`fetch`); `{"ok": {status, headers, body}}` or `{"error": why}`.
    fn fetch(&self, request: Json) -> Json;
    /// A `console.*` line, already bounded.
    fn log(&self, level: &str, text: &str);
}

/// The longest `console` line kept (characters).
pub(crate) const MAX_LOG_LINE: usize = 4096;
/// The most `console` lines one call writes to the log.
pub(crate) const MAX_LOG_LINES: usize = 200;

/// What the host functions of a context read: set at the start of each call, so that a context
/// can be prepared before the call it will serve is known.
#[derive(Default)]
pub(crate) struct CallState {
    pub(crate) lines: Cell<usize>,
    /// The timers the code set: id and when each is due.
    pub(crate) timers: RefCell<Vec<(i32, Instant)>>,
}

/// The host functions of one context, made the first time a built-in module loads into it (the
/// built-in modules are the only code that calls them): a call that loads none never makes them.
pub(crate) struct HostFunctions {
    state: Rc<CallState>,
    host: Rc<dyn Host>,
    modules: Rc<ModuleStore>,
    made: Cell<bool>,
}

impl HostFunctions {
    /// The host functions a context will have, none made yet.
    pub(crate) fn new(state: Rc<CallState>, host: Rc<dyn Host>, modules: Rc<ModuleStore>) -> Self {
        Self {
            state,
            host,
            modules,
            made: Cell::new(false),
        }
    }

    /// Whether they are made.
    pub(crate) fn made(&self) -> bool {
        self.made.get()
    }

    /// Makes them on `functions` (the context's object of host functions), once they are all
    /// made.
    pub(crate) fn make<'js>(
        &self,
        ctx: &Ctx<'js>,
        functions: &Object<'js>,
    ) -> rquickjs::Result<()> {
        if self.made.get() {
            return Ok(());
        }
        install_host(ctx, functions, &self.state, &self.host)?;
        crate::node::install_hosts(ctx, functions)?;
        crate::packages::install(ctx, functions, &self.modules)?;
        // Only once all are made (out of memory half-way, the next load makes them again: each
        // install only sets its properties).
        self.made.set(true);
        Ok(())
    }
}

/// The host functions the prelude wraps: a log line, a UUID, and timers kept by the host. They
/// read the call they serve from `state`.
fn install_host<'js>(
    ctx: &Ctx<'js>,
    functions: &Object<'js>,
    state: &Rc<CallState>,
    host: &Rc<dyn Host>,
) -> rquickjs::Result<()> {
    let log = state.clone();
    let to = host.clone();
    functions.set(
        "log",
        host_function(ctx, move |level: String, text: String| {
            // At debug, escaped (no forged lines), at most 4 KiB a line and 200 lines a call.
            log.lines.set(log.lines.get() + 1);
            if log.lines.get() > MAX_LOG_LINES {
                return;
            }
            let text: String = text.chars().take(MAX_LOG_LINE).collect();
            to.log(&level, &text);
        })?,
    )?;
    functions.set(
        "uuid",
        host_function(ctx, || uuid::Uuid::new_v4().to_string())?,
    )?;
    let set = state.clone();
    functions.set(
        "setTimer",
        host_function(ctx, move |id: i32, ms: f64| {
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
    functions.set(
        "fetch",
        host_function(ctx, move |request: String| -> String {
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
    let client = host.clone();
    functions.set(
        "client",
        host_function(
            ctx,
            move |method: String, args: String, key: String| -> String {
                bounded_svc(client.as_ref(), method, &args, Some(key))
            },
        )?,
    )?;
    let clear = state.clone();
    functions.set(
        "clearTimer",
        host_function(ctx, move |id: i32| {
            clear.timers.borrow_mut().retain(|(t, _)| *t != id);
        })?,
    )?;
    Ok(())
}

/// The largest outbound request (`fetch`), as the JSON text the worker sends (the body in
/// base64): within the server's bound on a frame from a worker.
const MAX_FETCH_REQUEST: usize = 3 << 20;

/// The largest arguments of one `req.svc` call, as JSON text.
const MAX_SVC_ARGS: usize = 2 << 20;

/// The host side of `req.svc`: the host answers it (the worker asks the server and blocks; its
/// JavaScript waits anyway). The server bounds the call by the call's deadline.
pub(crate) fn svc_host<'js>(ctx: &Ctx<'js>, host: Rc<dyn Host>) -> rquickjs::Result<Function<'js>> {
    host_function(ctx, move |method: String, args: String| -> String {
        bounded_svc(host.as_ref(), method, &args, None)
    })
}

/// A svc call, bounded here before it leaves the worker: the HTTP API's own body limit, with
/// room for the method's other arguments.
fn bounded_svc(host: &dyn Host, method: String, args: &str, key: Option<String>) -> String {
    if key.as_ref().is_some_and(|k| k.len() > 256) {
        // No call's key is that long.
        return serde_json::json!({"error": {"status": 401, "title": "Unauthorized",
            "detail": "the API key is not valid here"}})
        .to_string();
    }
    if args.len() > MAX_SVC_ARGS || method.len() > 64 {
        return serde_json::json!({"error": {"status": 413, "title": "Payload Too Large",
            "detail": "the arguments of a svc call are limited to 2 MiB"}})
        .to_string();
    }
    let args: Vec<Json> = serde_json::from_str(args).unwrap_or_default();
    host.svc(method, args, key).to_string()
}
