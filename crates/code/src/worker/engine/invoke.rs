//! A call inside its context: the request (with `req.svc` when asked for), the module, the
//! event loop that fires timers until the returned promise settles, and the result as JSON
//! within its size limit.

use std::rc::Rc;
use std::time::Instant;

use rquickjs::{CatchResultExt, Ctx, Value};
use serde_json::Value as Json;
use tokenvault_domain::ports::code::CodeError;

use super::{Call, Engine, Prepared};
use crate::worker::failure::{MAX_COMPILE_MESSAGE, Stop, failure};
use crate::worker::host_calls::svc_host;
use crate::worker::script;

impl Engine {
    pub(super) fn call_in(
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
                line: None,
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
