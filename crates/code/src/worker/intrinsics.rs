//! A call's fresh context: QuickJS's standard intrinsics as `JS_NewContext` adds them, but four
//! groups added the first time code reads or assigns one of their names, or the vault loads a
//! built-in module (whose host functions take and make `Uint8Array`s, and whose code uses `Map`):
//! the typed arrays, `Date`, `Map`/`Set`/`WeakMap`/`WeakSet`, and `WeakRef` with
//! `FinalizationRegistry`.
//!
//! The typed arrays (`ArrayBuffer`, `SharedArrayBuffer`, `DataView`, `Atomics` and the twelve
//! array classes, with their prototypes) were a fifth of what making a context cost, and the
//! other three groups another tenth (`docs/performance-journal.md`); a call that uses none of them (or
//! `Buffer`, `crypto`, `fetch`, …, which load a built-in module) never pays for them now. Added,
//! they are QuickJS's own, as in any context; until then their names are accessors like the other
//! lazy globals (`lazy.rs`).
//!
//! QuickJS's own uses of these prototypes all start from one of those names (a `Date` is made by
//! `Date`, a map by `Map`, …), except the C API that host functions call (`JS_NewArrayBuffer`,
//! `JS_NewUint8Array`) and the bytecode reader's dates and maps (the vault reads only bytecode it
//! compiled from source, which holds neither); host functions are reached only through built-in
//! modules, and loading one adds every group first.

use std::cell::Cell;
use std::ptr::NonNull;
use std::rc::Rc;

use rquickjs::{Context, Ctx, Error, Exception, Function, Runtime, qjs};

use super::host_function::host_function;
use super::lazy::{OwnProperty, own_property};

/// The globals `JS_AddIntrinsicTypedArrays` defines.
const TYPED_ARRAYS: &[&str] = &[
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

/// A group of intrinsics added on first use: what one of QuickJS's `JS_AddIntrinsic…` adds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Group {
    /// `JS_AddIntrinsicTypedArrays`.
    TypedArrays = 0,
    /// `JS_AddIntrinsicDate`.
    Date = 1,
    /// `JS_AddIntrinsicMapSet`.
    MapSet = 2,
    /// `JS_AddIntrinsicWeakRef`.
    WeakRef = 3,
}

impl Group {
    /// Every group.
    pub(crate) const ALL: [Self; 4] = [Self::TypedArrays, Self::Date, Self::MapSet, Self::WeakRef];

    /// The globals the group's add defines.
    pub(crate) fn names(self) -> &'static [&'static str] {
        match self {
            Self::TypedArrays => TYPED_ARRAYS,
            Self::Date => &["Date"],
            Self::MapSet => &["Map", "Set", "WeakMap", "WeakSet"],
            Self::WeakRef => &["WeakRef", "FinalizationRegistry"],
        }
    }

    /// The group that defines `name`.
    fn of(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|g| g.names().contains(&name))
    }

    /// What the group's errors call it.
    fn label(self) -> &'static str {
        match self {
            Self::TypedArrays => "the typed arrays",
            Self::Date => "Date",
            Self::MapSet => "Map, Set, WeakMap and WeakSet",
            Self::WeakRef => "WeakRef and FinalizationRegistry",
        }
    }

    /// Adds the group to `raw`; `false` with an exception pending when QuickJS failed.
    ///
    /// # Safety
    /// `raw` is a live context to which the group was never added, made ready by [`clear`].
    #[allow(unsafe_code)]
    unsafe fn add(self, raw: *mut qjs::JSContext) -> bool {
        // SAFETY: as the function's contract says.
        unsafe {
            match self {
                Self::TypedArrays => qjs::JS_AddIntrinsicTypedArrays(raw) == 0,
                Self::Date => qjs::JS_AddIntrinsicDate(raw) == 0,
                Self::MapSet => qjs::JS_AddIntrinsicMapSet(raw) == 0,
                Self::WeakRef => qjs::JS_AddIntrinsicWeakRef(raw) == 0,
            }
        }
    }
}

/// A context of `runtime` (whose raw pointer `raw` is) with every standard intrinsic of
/// `JS_NewContext` but those of the four [`Group`]s.
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
            && qjs::JS_AddIntrinsicEval(ctx) == 0
            && qjs::JS_AddIntrinsicRegExp(ctx) == 0
            && qjs::JS_AddIntrinsicJSON(ctx) == 0
            && qjs::JS_AddIntrinsicProxy(ctx) == 0
            && qjs::JS_AddIntrinsicPromise(ctx) == 0
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

/// Which of one context's [`Group`]s are there yet: each context has its own, and adds each at
/// most once (QuickJS aborts the process when an intrinsic it adds finds one of its properties
/// already there, as a second add would).
#[derive(Debug)]
pub(crate) struct LazyIntrinsics {
    /// The context they are for (compared only, never dereferenced): QuickJS calls a native
    /// function with its caller's context, which must be this one.
    context: NonNull<qjs::JSContext>,
    added: [Cell<bool>; Group::ALL.len()],
}

impl LazyIntrinsics {
    /// The groups of `context`, none added yet.
    pub(crate) fn new(context: &Context) -> Self {
        Self {
            context: context.as_raw(),
            added: Default::default(),
        }
    }

    /// Adds `group` to `ctx` (the context this belongs to) unless it is there. Marked once
    /// cleared, before QuickJS adds: an add that failed (out of memory) is not tried again, one
    /// that was refused is tried again when next needed (and checked again).
    ///
    /// QuickJS's add of the typed arrays defines its names with no check, aborting the process
    /// on a property it finds in its way (the others' quietly leave such a name undefined, and
    /// a second add would change the prototypes of objects already made), and reads `globalThis.Uint8Array` and
    /// `Array.prototype.toString` as it goes; so it runs only on a global object code left
    /// extensible, with every name it defines deleted first (the accessors `lazy.rs` made, or
    /// what code put there), and for the typed arrays with an own plain `toString` on
    /// `Array.prototype` (no getter of the code's runs in the middle of the add). Otherwise the
    /// add is refused with a `TypeError`, in that call only.
    pub(crate) fn ensure(&self, ctx: &Ctx<'_>, group: Group) -> rquickjs::Result<()> {
        if ctx.as_raw() != self.context {
            return Err(Exception::throw_type(ctx, "intrinsics of another context"));
        }
        let added = &self.added[group as usize];
        if added.get() {
            return Ok(());
        }
        let raw = ctx.as_raw().as_ptr();
        // SAFETY: `raw` is the live context this belongs to (checked above), and this is the
        // first and only add of `group` for it (the mark, set before it); `clear` leaves no
        // exception pending when it answers `Ok`.
        #[allow(unsafe_code)]
        unsafe {
            if let Err(why) = clear(raw, group) {
                return Err(Exception::throw_type(
                    ctx,
                    &format!("{} cannot be added: {why}", group.label()),
                ));
            }
            added.set(true);
            if !group.add(raw) {
                return Err(Error::Exception);
            }
        }
        Ok(())
    }

    /// Adds every group not there yet (before a built-in module loads).
    pub(crate) fn ensure_all(&self, ctx: &Ctx<'_>) -> rquickjs::Result<()> {
        Group::ALL
            .into_iter()
            .try_for_each(|group| self.ensure(ctx, group))
    }

    /// What the groups' lazy names call (`lazy.rs`, [`Made::Intrinsic`]): adds the group of the
    /// name, which defines it.
    ///
    /// [`Made::Intrinsic`]: super::lazy::Made::Intrinsic
    pub(crate) fn maker<'js>(self: &Rc<Self>, ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
        let this = self.clone();
        host_function(ctx, move |ctx: Ctx<'js>, name: String| {
            match Group::of(&name) {
                Some(group) => this.ensure(&ctx, group),
                None => Err(Exception::throw_type(&ctx, "not a lazy intrinsic")),
            }
        })
    }
}

/// Makes the global object of `raw` ready for the add of `group` (see
/// [`LazyIntrinsics::ensure`]), or says why it cannot be.
///
/// # Safety
/// `raw` is a live context.
#[allow(unsafe_code)]
unsafe fn clear(raw: *mut qjs::JSContext, group: Group) -> Result<(), &'static str> {
    // SAFETY: as the function's contract says; every value and atom made here is freed once.
    // None of the calls runs code: the global object and `Array.prototype` are ordinary objects
    // (no proxy traps), and deleting an own property calls no accessor.
    unsafe {
        let global = qjs::JS_GetGlobalObject(raw);
        let outcome = if qjs::JS_IsExtensible(raw, global) != 1 {
            Err("the global object is not extensible")
        } else if group == Group::TypedArrays && !plain_array_to_string(raw) {
            Err("Array.prototype.toString is not a plain property")
        } else {
            // Every name checked before any is deleted: a refused add leaves the names (and
            // their accessors) as they were.
            let mut outcome = Ok(());
            for delete in [false, true] {
                for name in group.names() {
                    let atom = qjs::JS_NewAtomLen(raw, name.as_ptr().cast(), name.len() as _);
                    let done = atom != qjs::JS_ATOM_NULL
                        && if delete {
                            qjs::JS_DeleteProperty(raw, global, atom, 0) == 1
                        } else {
                            deletable(raw, global, atom)
                        };
                    if atom != qjs::JS_ATOM_NULL {
                        qjs::JS_FreeAtom(raw, atom);
                    }
                    if !done {
                        outcome = Err("one of their names cannot be deleted");
                        break;
                    }
                }
                if outcome.is_err() {
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

/// Whether `atom` is missing from `global`, or an own configurable property of it.
///
/// # Safety
/// `raw` is a live context, `global` its global object, `atom` an atom of its runtime.
#[allow(unsafe_code)]
unsafe fn deletable(raw: *mut qjs::JSContext, global: qjs::JSValue, atom: qjs::JSAtom) -> bool {
    // SAFETY: as the function's contract says; a found descriptor's three values are freed
    // once. Reading a descriptor of an ordinary object calls no accessor.
    unsafe {
        let mut descriptor = std::mem::MaybeUninit::<qjs::JSPropertyDescriptor>::uninit();
        match qjs::JS_GetOwnProperty(raw, descriptor.as_mut_ptr(), global, atom) {
            found if found < 0 => false,
            0 => true,
            _ => {
                let descriptor = descriptor.assume_init();
                qjs::JS_FreeValue(raw, descriptor.value);
                qjs::JS_FreeValue(raw, descriptor.getter);
                qjs::JS_FreeValue(raw, descriptor.setter);
                descriptor.flags & CONFIGURABLE != 0
            }
        }
    }
}

// QuickJS's flag of a configurable property (a small constant: the cast is exact).
#[allow(clippy::cast_possible_wrap)]
const CONFIGURABLE: std::ffi::c_int = qjs::JS_PROP_CONFIGURABLE as std::ffi::c_int;

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
