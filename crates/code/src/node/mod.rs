//! The modules tenant code loads: Node's built-in modules, the globals and `req.svc`, one folder
//! each (its JavaScript, its host functions, its tests) and one registry ([`MODULES`]). The
//! engine compiles them once per runtime and loads one into a context on first use
//! (`worker/builtins.rs`). `LICENSES.md` says where each comes from.

pub(crate) mod crypto;
mod http;
mod stream;
#[cfg(test)]
mod tests;
pub(crate) mod url;

use rquickjs::{Ctx, Object};

/// Every module the prelude loads into a context when its code first needs them, by name: the
/// globals and `req.svc` (ES modules), and the built-in modules of `require` (CommonJS, see
/// `worker/builtins.rs`). Each lives in its own folder here with its host functions and tests;
/// `LICENSES.md` says where each comes from.
pub(crate) const MODULES: &[NodeModule] = &[
    es("globals", include_str!("globals/globals.js")),
    es("svc", include_str!("svc/svc.js")),
    cjs("buffer", include_str!("buffer/buffer.js")),
    cjs("base64-js", include_str!("buffer/base64-js.js")),
    cjs("ieee754", include_str!("buffer/ieee754.js")),
    cjs("crypto", include_str!("crypto/crypto.js")).with_host(crypto::install),
    cjs("events", include_str!("events/events.js")),
    cjs("process", include_str!("process/process.js")),
    cjs("querystring", include_str!("querystring/querystring.js")),
    cjs("qs-decode", include_str!("querystring/qs-decode.js")),
    cjs("qs-encode", include_str!("querystring/qs-encode.js")),
    cjs(
        "string_decoder",
        include_str!("string_decoder/string_decoder.js"),
    ),
    cjs("fetch", include_str!("http/fetch.js")),
    cjs("http-core", include_str!("http/http.js")),
    cjs("url", include_str!("url/url.js")).with_host(url::install),
    cjs("util", include_str!("util/util.js")),
    cjs("bt-clients", include_str!("bt-clients/bt-clients.js")),
    cjs("stream", include_str!("stream/stream.js")).with_packages(stream::VENDORED),
    cjs("zlib", include_str!("zlib/zlib.js")),
    cjs("fs", include_str!("fs/fs.js")),
    cjs("os", include_str!("os/os.js")),
    cjs("tty", include_str!("tty/tty.js")),
    cjs("net", include_str!("net/net.js")),
    cjs("tls", include_str!("tls/tls.js")),
    cjs("dns", include_str!("dns/dns.js")),
    cjs("http2", include_str!("http2/http2.js")),
    cjs("dgram", include_str!("dgram/dgram.js")),
    cjs("domain", include_str!("domain/domain.js")),
    cjs("constants", include_str!("constants/constants.js")),
    cjs(
        "child_process",
        include_str!("child_process/child_process.js"),
    ),
    cjs("timers", include_str!("timers/timers.js")),
    cjs("assert", include_str!("assert/assert.js")),
    cjs("path", include_str!("path/path.js")),
    cjs("punycode", include_str!("punycode/punycode.js")),
];

/// Makes a module's host functions on the context's object of them.
pub(crate) type Install = for<'js> fn(&Ctx<'js>, &Object<'js>) -> rquickjs::Result<()>;

/// One module of [`MODULES`].
pub(crate) struct NodeModule {
    /// The name the prelude and `require` load it by.
    pub(crate) name: &'static str,
    pub(crate) source: Source,
    /// The host functions its JavaScript calls, if any.
    pub(crate) host: Option<Install>,
    /// npm packages it requires, vendored unchanged: `(path as code sees it, source)`, compiled
    /// with the operator's packages (`packages.rs`).
    pub(crate) packages: &'static [(&'static str, &'static str)],
}

const fn es(name: &'static str, text: &'static str) -> NodeModule {
    NodeModule {
        name,
        source: Source::Es(text),
        host: None,
        packages: &[],
    }
}

const fn cjs(name: &'static str, text: &'static str) -> NodeModule {
    NodeModule {
        name,
        source: Source::CommonJs(text),
        host: None,
        packages: &[],
    }
}

impl NodeModule {
    const fn with_host(mut self, host: Install) -> Self {
        self.host = Some(host);
        self
    }

    const fn with_packages(mut self, packages: &'static [(&'static str, &'static str)]) -> Self {
        self.packages = packages;
        self
    }
}

/// The vendored npm packages of every module.
pub(crate) fn packages() -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    MODULES.iter().flat_map(|m| m.packages.iter())
}

/// Makes the host functions of every module on `functions`.
pub(crate) fn install_hosts<'js>(ctx: &Ctx<'js>, functions: &Object<'js>) -> rquickjs::Result<()> {
    for module in MODULES {
        if let Some(install) = module.host {
            install(ctx, functions)?;
        }
    }
    Ok(())
}

/// A built-in module's source.
pub(crate) enum Source {
    /// An ES module whose default export the prelude calls.
    Es(&'static str),
    /// A CommonJS module, compiled as `worker/builtins.rs` wraps it.
    CommonJs(&'static str),
}
