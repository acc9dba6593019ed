//! A call's fresh context: QuickJS's standard intrinsics as `JS_NewContext` adds them, but the
//! typed arrays, which are added the first time code reads or assigns one of their names, or the
//! vault loads a built-in module (whose host functions take and make `Uint8Array`s).
//!
//! The typed arrays (`ArrayBuffer`, `SharedArrayBuffer`, `DataView`, `Atomics` and the twelve
//! array classes, with their prototypes) were a fifth of what making a context cost, and a call
//! that uses none of them (or `Buffer`, `crypto`, `fetch`, …, which load a built-in module) never
//! pays for them now. Added, they are QuickJS's own, as in any context; until then their names
//! are accessors like the other lazy globals (`lazy.rs`).
//!
//! QuickJS's own uses of the typed arrays' prototypes all start from one of those names, except
//! the C API that host functions call (`JS_NewArrayBuffer`, `JS_NewUint8Array`); host functions
//! are reached only through built-in modules, and loading one adds the typed arrays first.

use std::cell::Cell;
use std::ptr::NonNull;
use std::rc::Rc;

use rquickjs::{Context, Ctx, Error, Exception, Function, Runtime, Value, qjs};

use crate::host_function::host_function;
use crate::lazy::{OwnProperty, own_property};

/// The globals `JS_AddIntrinsicTypedArrays` defines.
pub(crate) const TYPED_ARRAYS: &[&str] = &[
    "ArrayBuffer",
    "SharedArrayBuffer",
    "Uint8ClampedArray",
    "Int8Array",
    "Uint8Array",
    "Int16Array",
    "Uint16Array",
    "Int32Array",
    "Uint32Array",
    "BigInt64Array",
    "BigUint64Array",
    "Float16Array",
    "Float32Array",
    "Float64Array",
    "DataView",
    "Atomics",
];

/// A context of `runtime` (whose raw pointer `raw` is) with every standard intrinsic of
/// `JS_NewContext` but the typed arrays.
pub(crate) fn context(runtime: &Runtime, raw: NonNull<qjs::JSRuntime>) -> Result<Context, String> {
    // SAFETY: `raw` is `runtime`'s own pointer, alive as long as `runtime` is. The new context
    // has one reference, which `Context::from_raw` takes over (and gives back when dropped, on
    // failure here too); the intrinsics are QuickJS's, each added once, in `JS_NewContext`'s
    // order. Made without rquickjs's runtime lock, which only guards against other threads: an
    // engine and its runtime never leave the worker's one thread.
    #[allow(unsafe_code)]
    unsafe {
        let made = NonNull::new(qjs::JS_NewContextRaw(raw.as_ptr()))
            .ok_or_else(|| "QuickJS could not make a context".to_string())?;
        let ctx = made.as_ptr();
        let added = qjs::JS_AddIntrinsicBaseObjects(ctx) == 0
            && qjs::JS_AddIntrinsicDate(ctx) == 0
            && qjs::JS_AddIntrinsicEval(ctx) == 0
            && qjs::JS_AddIntrinsicRegExp(ctx) == 0
            && qjs::JS_AddIntrinsicJSON(ctx) == 0
            && qjs::JS_AddIntrinsicProxy(ctx) == 0
            && qjs::JS_AddIntrinsicMapSet(ctx) == 0
            && qjs::JS_AddIntrinsicPromise(ctx) == 0
            && qjs::JS_AddIntrinsicWeakRef(ctx) == 0
            && qjs::JS_AddIntrinsicAToB(ctx) == 0
            && qjs::JS_AddPerformance(ctx) == 0;
        let context = Context::from_raw(made, runtime.clone());
        if added {
            Ok(context)
        } else {
            Err("QuickJS could not add the intrinsics to a context".to_string())
        }
    }
}

/// Whether one context's typed arrays are there yet: each context has its own, and adds them at
/// most once (QuickJS aborts the process when an intrinsic it adds finds one of its properties
/// already there, as a second add would).
#[derive(Debug)]
pub(crate) struct TypedArrays {
    /// The context they are for (compared only, never dereferenced): QuickJS calls a native
    /// function with its caller's context, which must be this one.
    context: NonNull<qjs::JSContext>,
    added: Cell<bool>,
}

impl TypedArrays {
    /// The typed arrays of `context`, not added yet.
    pub(crate) fn new(context: &Context) -> Self {
        Self {
            context: context.as_raw(),
            added: Cell::new(false),
        }
    }

    /// Adds the typed arrays to `ctx` (the context this belongs to) unless they are there. Marked
    /// first: an add that was refused or failed is not tried again.
    ///
    /// QuickJS's add reads `globalThis.Uint8Array` and `Array.prototype.toString` and defines its
    /// names with no check, aborting the process on a property it finds in its way; so it runs
    /// only on a global object code left extensible, with an own plain `toString` on
    /// `Array.prototype` (no getter of the code's runs in the middle of the add), and with every
    /// name it defines deleted first (the accessors `lazy.rs` made, or what code put there).
    /// Otherwise the add is refused with a `TypeError`, in that call only.
    pub(crate) fn ensure(&self, ctx: &Ctx<'_>) -> rquickjs::Result<()> {
        if ctx.as_raw() != self.context {
            return Err(Exception::throw_type(
                ctx,
                "typed arrays of another context",
            ));
        }
        if self.added.replace(true) {
            return Ok(());
        }
        let raw = ctx.as_raw().as_ptr();
        // SAFETY: `raw` is the live context this belongs to (checked above), and this is the
        // first and only add for it (the mark); `clear` leaves no exception pending when it
        // answers `Ok`.
        #[allow(unsafe_code)]
        unsafe {
            if let Err(why) = clear(raw) {
                return Err(Exception::throw_type(ctx, why));
            }
            if qjs::JS_AddIntrinsicTypedArrays(raw) < 0 {
                return Err(Error::Exception);
            }
        }
        Ok(())
    }

    /// What the typed arrays' lazy names call (`lazy.rs`, [`Made::Intrinsic`]): adds them,
    /// which defines the names.
    ///
    /// [`Made::Intrinsic`]: crate::lazy::Made::Intrinsic
    pub(crate) fn maker<'js>(self: &Rc<Self>, ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
        let this = self.clone();
        host_function(ctx, move |ctx: Ctx<'js>, _name: Value<'js>| {
            this.ensure(&ctx)
        })
    }
}

/// Makes the global object of `raw` ready for `JS_AddIntrinsicTypedArrays` (see
/// [`TypedArrays::ensure`]), or says why it cannot be.
///
/// # Safety
/// `raw` is a live context.
#[allow(unsafe_code)]
unsafe fn clear(raw: *mut qjs::JSContext) -> Result<(), &'static str> {
    // SAFETY: as the function's contract says; every value and atom made here is freed once.
    // None of the calls runs code: the global object and `Array.prototype` are ordinary objects
    // (no proxy traps), and deleting an own property calls no accessor.
    unsafe {
        let global = qjs::JS_GetGlobalObject(raw);
        let outcome = if qjs::JS_IsExtensible(raw, global) != 1 {
            Err("the typed arrays cannot be added: the global object is not extensible")
        } else if !plain_array_to_string(raw) {
            Err(
                "the typed arrays cannot be added: Array.prototype.toString is not a plain property",
            )
        } else {
            let mut outcome = Ok(());
            for name in TYPED_ARRAYS {
                let atom = qjs::JS_NewAtomLen(raw, name.as_ptr().cast(), name.len() as _);
                let deleted =
                    atom != qjs::JS_ATOM_NULL && qjs::JS_DeleteProperty(raw, global, atom, 0) == 1;
                if atom != qjs::JS_ATOM_NULL {
                    qjs::JS_FreeAtom(raw, atom);
                }
                if !deleted {
                    outcome = Err(
                        "the typed arrays cannot be added: one of their names cannot be deleted",
                    );
                    break;
                }
            }
            outcome
        };
        qjs::JS_FreeValue(raw, global);
        if outcome.is_err() {
            // What QuickJS may have left pending (no memory for an atom) makes way for the
            // `TypeError`.
            qjs::JS_FreeValue(raw, qjs::JS_GetException(raw));
        }
        outcome
    }
}

/// Whether `Array.prototype` (the real one: that of a new array) has an own plain `toString`.
///
/// # Safety
/// `raw` is a live context.
#[allow(unsafe_code)]
unsafe fn plain_array_to_string(raw: *mut qjs::JSContext) -> bool {
    // SAFETY: as the function's contract says; every value, atom and descriptor part made here is
    // freed once.
    unsafe {
        let array = qjs::JS_NewArray(raw);
        if qjs::JS_IsException(array) {
            return false;
        }
        let prototype = qjs::JS_GetPrototype(raw, array);
        qjs::JS_FreeValue(raw, array);
        if qjs::JS_IsException(prototype) {
            return false;
        }
        let atom = qjs::JS_NewAtom(raw, c"toString".as_ptr());
        let plain = atom != qjs::JS_ATOM_NULL
            && match own_property(raw, prototype, atom) {
                OwnProperty::Found { value, accessor } => {
                    qjs::JS_FreeValue(raw, value);
                    !accessor
                }
                OwnProperty::Missing | OwnProperty::Thrown => false,
            };
        if atom != qjs::JS_ATOM_NULL {
            qjs::JS_FreeAtom(raw, atom);
        }
        qjs::JS_FreeValue(raw, prototype);
        plain
    }
}
