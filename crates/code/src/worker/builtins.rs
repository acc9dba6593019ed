//! The modules of [`MODULES`](crate::node::MODULES) in a worker: compiled as ES modules once per
//! runtime, and loaded into a context on first use (`__builtin`).

use std::rc::Rc;

use rquickjs::function::Opt;
use rquickjs::{Ctx, Module, Object, Value};

use super::host_calls::HostFunctions;
use super::host_function::host_function;
use super::intrinsics::LazyIntrinsics;

/// A CommonJS module as an ES module whose default export is the function Node.js would wrap
/// it in (`exports`, `require`, `module`) and the worker's host functions. The body runs in
/// strict mode (an ES module's), which every built-in module is written for.
pub(crate) fn common_js(source: &str) -> String {
    format!("export default function (exports, require, module, host) {{\n{source}\n}}\n")
}

/// `builtin(name, functions?)`: loads the module `name` of [`MODULES`](crate::node::MODULES) into this context (the
/// prelude calls it at most once per name and context) and answers its default export; the first
/// load is handed the context's object of host functions, and makes them on it
/// ([`HostFunctions`]).
pub(crate) fn install_builtins<'js>(
    ctx: &Ctx<'js>,
    host: &Object<'js>,
    builtins: &Rc<Vec<(&'static str, Vec<u8>)>>,
    intrinsics: &Rc<LazyIntrinsics>,
    functions: &Rc<HostFunctions>,
) -> rquickjs::Result<()> {
    let builtins = builtins.clone();
    let intrinsics = intrinsics.clone();
    let host_functions = functions.clone();
    host.set(
        "builtin",
        host_function(
            ctx,
            move |ctx: Ctx<'js>,
                  name: String,
                  functions: Opt<Object<'js>>|
                  -> rquickjs::Result<Value<'js>> {
                // The modules' host functions take and make typed arrays, and their code uses
                // `Map` and `Date` (`intrinsics.rs`).
                intrinsics.ensure_all(&ctx)?;
                // The first module a context loads (from the prelude, which hands over its object
                // of host functions) has them made (`HostFunctions`).
                match functions.0 {
                    Some(functions) => host_functions.make(&ctx, &functions)?,
                    None if host_functions.made() => {}
                    None => {
                        return Err(rquickjs::Exception::throw_reference(
                            &ctx,
                            "no host functions yet",
                        ));
                    }
                }
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
