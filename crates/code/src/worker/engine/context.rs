//! The context of the next call, made ahead while the worker is idle: a fresh context with the
//! host functions' object, the prelude loaded from its bytecode, and the lazy globals.

use std::rc::Rc;

use rquickjs::{CatchResultExt, Function, Module, Object, Persistent};

use super::{Engine, Prepared};
use crate::worker::builtins::install_builtins;
use crate::worker::failure::caught_message;
use crate::worker::host_calls::HostFunctions;
use crate::worker::intrinsics::{self, Group, LazyIntrinsics};
use crate::worker::lazy::{self, LAZY, Made};

impl Engine {
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
}
