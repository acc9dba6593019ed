//! Node's built-in modules and the globals module, as the engine compiles them once per runtime
//! and loads them into a context on first use (`__builtin`). `node/LICENSES.md` says where each
//! comes from.

use crate::host_calls::HostFunctions;
use crate::host_function::host_function;
use crate::intrinsics::LazyIntrinsics;
use std::rc::Rc;

use rquickjs::function::Opt;
use rquickjs::{Ctx, Module, Object, Value};

/// The modules the prelude loads into a context when its code first needs them, by name: the
/// globals (an ES module), and the built-in modules of `require` (CommonJS, see
/// [`common_js`]; `node/LICENSES.md` says where each comes from).
pub(crate) const BUILTINS: &[(&str, Source)] = &[
    ("globals", Source::Es(include_str!("globals.js"))),
    ("svc", Source::Es(include_str!("svc.js"))),
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
    (
        "bt-clients",
        Source::CommonJs(include_str!("node/bt-clients.js")),
    ),
    ("stream", Source::CommonJs(include_str!("node/stream.js"))),
    ("zlib", Source::CommonJs(include_str!("node/zlib.js"))),
    ("fs", Source::CommonJs(include_str!("node/fs.js"))),
    ("os", Source::CommonJs(include_str!("node/os.js"))),
    ("tty", Source::CommonJs(include_str!("node/tty.js"))),
    ("net", Source::CommonJs(include_str!("node/net.js"))),
    ("tls", Source::CommonJs(include_str!("node/tls.js"))),
    ("dns", Source::CommonJs(include_str!("node/dns.js"))),
    ("http2", Source::CommonJs(include_str!("node/http2.js"))),
    ("dgram", Source::CommonJs(include_str!("node/dgram.js"))),
    ("domain", Source::CommonJs(include_str!("node/domain.js"))),
    (
        "constants",
        Source::CommonJs(include_str!("node/constants.js")),
    ),
    (
        "child_process",
        Source::CommonJs(include_str!("node/child_process.js")),
    ),
    ("timers", Source::CommonJs(include_str!("node/timers.js"))),
    ("assert", Source::CommonJs(include_str!("node/assert.js"))),
    ("path", Source::CommonJs(include_str!("node/path.js"))),
    (
        "punycode",
        Source::CommonJs(include_str!("node/punycode.js")),
    ),
];

/// A built-in module's source.
pub(crate) enum Source {
    /// An ES module whose default export the prelude calls.
    Es(&'static str),
    /// A CommonJS module, compiled as [`common_js`] wraps it.
    CommonJs(&'static str),
}

/// A CommonJS module as an ES module whose default export is the function Node.js would wrap
/// it in (`exports`, `require`, `module`) and the worker's host functions. The body runs in
/// strict mode (an ES module's), which every built-in module is written for.
pub(crate) fn common_js(source: &str) -> String {
    format!("export default function (exports, require, module, host) {{\n{source}\n}}\n")
}

/// `builtin(name, functions?)`: loads the module `name` of [`BUILTINS`] into this context (the
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
