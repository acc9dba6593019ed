//! Making an engine: a runtime with its memory limit and interrupt handler, the prelude and the
//! built-in modules compiled (once per worker process: a renewed engine takes them over), and
//! the names every context is made of, kept from a sample context.

use std::cell::{Cell, RefCell};
use std::ptr::NonNull;
use std::rc::Rc;
use std::time::Instant;

use rquickjs::{CatchResultExt, Context, Module, Runtime, WriteOptions};

use super::{Engine, Host, Limits, PRELUDE};
use crate::node::{MODULES, Source};
use crate::packages::ModuleStore;
use crate::worker::budget::{Budgeted, Meter};
use crate::worker::builtins::common_js;
use crate::worker::code_cache::CodeCache;
use crate::worker::failure::caught_message;
use crate::worker::names::Names;

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
