//! The names a call's context is made of, kept alive between calls.
//!
//! QuickJS frees an atom (an interned property or variable name) once nothing refers to it, so
//! with a fresh context per call each context hashed, allocated and freed again the hundreds of
//! names its built-in objects, host functions and prelude are made of. They are collected once
//! per runtime, from a context made as a call gets it, and kept by the engine as strings (an
//! atom's string is the atom: holding it keeps the atom), made in a bare context of their own
//! that never runs code: names of the vault's own making, nothing of a call. Held from Rust, they
//! are no object the collector walks after every call.

use std::collections::BTreeSet;

use rquickjs::{Atom, Context, Persistent, Runtime, String as JsString};

/// Lists every string key reachable from the global object (through values, accessors and
/// prototypes), without calling an accessor.
const WALK: &str = r"(() => {
  const names = new Set(), seen = new Set();
  const visit = (o) => {
    if (o === null || (typeof o !== 'object' && typeof o !== 'function') || seen.has(o)) return;
    seen.add(o);
    for (const k of Reflect.ownKeys(o)) {
      if (typeof k === 'string') names.add(k);
      const d = Reflect.getOwnPropertyDescriptor(o, k);
      if (d) { visit(d.value); visit(d.get); visit(d.set); }
    }
    visit(Reflect.getPrototypeOf(o));
  };
  visit(globalThis);
  return [...names];
})()";

/// The kept names: declared before the runtime they belong to, so released before it.
pub(crate) struct Names {
    // Declared before `context`: released before it.
    _strings: Vec<Persistent<JsString<'static>>>,
    _context: Context,
}

impl Names {
    /// Keeps the names of `sample` (a context as a call gets it, which this runs code in) and the
    /// words of `sources` (the identifiers and property names of the code every context loads).
    pub(crate) fn keep(
        runtime: &Runtime,
        sample: &Context,
        sources: &[&str],
    ) -> Result<Self, String> {
        let mut names: BTreeSet<String> = sample
            .with(|ctx| ctx.eval::<Vec<String>, _>(WALK))
            .map_err(|e| e.to_string())?
            .into_iter()
            .collect();
        for source in sources {
            names.extend(
                source
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
                    .filter(|w| w.starts_with(|c: char| !c.is_ascii_digit()))
                    .map(str::to_owned),
            );
        }
        let context = Context::base(runtime).map_err(|e| e.to_string())?;
        let strings = context
            .with(|ctx| {
                names
                    .iter()
                    .map(|name| {
                        let string = Atom::from_str(ctx.clone(), name)?.to_js_string()?;
                        Ok(Persistent::save(&ctx, string))
                    })
                    .collect::<rquickjs::Result<Vec<_>>>()
            })
            .map_err(|e| e.to_string())?;
        Ok(Self {
            _strings: strings,
            _context: context,
        })
    }
}
