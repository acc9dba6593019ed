//! The names a call's context is made of, kept alive between calls.
//!
//! QuickJS frees an atom (an interned property or variable name) once nothing refers to it, so
//! with a fresh context per call each context hashed, allocated and freed again the hundreds of
//! names its built-in objects, host functions and prelude are made of. They are collected once
//! per runtime, from a context made as a call gets it, and kept by the engine as atoms held
//! directly (one reference each, given back when the engine goes): names of the vault's own
//! making, nothing of a call. No context is kept for them, so the collector run after every call
//! walks nothing but what that call left.

use std::collections::BTreeSet;

use rquickjs::{Context, qjs};

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
    /// Each holds one reference to its atom, given back by `drop`.
    atoms: Vec<qjs::JSAtom>,
    runtime: *mut qjs::JSRuntime,
}

impl Names {
    /// Keeps the names of `sample` (a context as a call gets it, which this runs code in) and the
    /// words of `sources` (the identifiers and property names of the code every context loads).
    pub(crate) fn keep(sample: &Context, sources: &[&str]) -> Result<Self, String> {
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
        let raw = sample.as_raw().as_ptr();
        // SAFETY: `raw` is a live context of this runtime for the whole block; an atom is the
        // runtime's, not the context's: each `JS_NewAtomLen` returns one reference, which
        // `drop` gives back to the same runtime (declared after `Names` in the engine, so it
        // outlives them). An atom is no object: the collector never walks what is kept here,
        // and no context stays alive for it.
        #[allow(unsafe_code)]
        let (runtime, atoms) = unsafe {
            let runtime = qjs::JS_GetRuntime(raw);
            let mut atoms = Vec::with_capacity(names.len());
            for name in &names {
                let atom = qjs::JS_NewAtomLen(raw, name.as_ptr().cast(), name.len() as _);
                if atom == qjs::JS_ATOM_NULL {
                    for atom in atoms {
                        qjs::JS_FreeAtomRT(runtime, atom);
                    }
                    return Err(format!("cannot keep the name {name}"));
                }
                atoms.push(atom);
            }
            (runtime, atoms)
        };
        Ok(Self { atoms, runtime })
    }
}

impl Drop for Names {
    fn drop(&mut self) {
        for atom in self.atoms.drain(..) {
            // SAFETY: each atom holds the one reference `keep` took, on this runtime, which is
            // still alive (see `keep`).
            #[allow(unsafe_code)]
            unsafe {
                qjs::JS_FreeAtomRT(self.runtime, atom);
            }
        }
    }
}
