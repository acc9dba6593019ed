//! The globals made on first use (`console`, `Buffer`, `URL`, the reactor errors, …).
//!
//! Every call gets a fresh context, and building every class and function up front cost more than
//! the rest of the call, so each listed name starts as an accessor that makes its value the first
//! time it is read (the prelude's `make`, which loads the `globals` module) and defines it in its
//! place as a plain writable, configurable property; assigning the name replaces it, as for any
//! global.
//!
//! The accessors are made here rather than in the prelude: one QuickJS native function per name,
//! holding the name and `make`, serves as both getter and setter. Made from JavaScript, each name
//! cost a closure and an `Object.defineProperty` whose descriptor QuickJS reads property by
//! property — two thirds of the prelude's evaluation in every context. (A proxy as the global
//! object's prototype would be cheaper still, but QuickJS then answers an undeclared name with
//! `undefined` instead of a `ReferenceError`.)

use std::ffi::c_int;

use rquickjs::{Ctx, Error, Function, qjs};

// QuickJS's property flags, as its functions take them (small constants: the casts are exact).
#[allow(clippy::cast_possible_wrap)]
const CONFIGURABLE: c_int = qjs::JS_PROP_CONFIGURABLE as c_int;
#[allow(clippy::cast_possible_wrap)]
const WRITABLE: c_int = qjs::JS_PROP_WRITABLE as c_int;

/// The globals made on first use (docs/decisions.md §7).
pub(crate) const LAZY: &[&str] = &[
    "console",
    "setTimeout",
    "clearTimeout",
    "setInterval",
    "clearInterval",
    "setImmediate",
    "clearImmediate",
    "crypto",
    "Buffer",
    "process",
    "global",
    "structuredClone",
    "URL",
    "URLSearchParams",
    "fetch",
    "Headers",
    "Request",
    "Response",
    "TextEncoder",
    "TextDecoder",
    "BadRequestError",
    "AuthenticationError",
    "InvalidPaymentMethodError",
    "AuthorizationError",
    "InvalidReactorConfigurationError",
    "InvalidReactorFormulaError",
    "RateLimitError",
    "ReactorRuntimeError",
    "ServiceUnavailableError",
    "CustomHttpResponseError",
];

/// What a lazy name's `make` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Made {
    /// `make(name)` answers the value (the prelude's `make`, for [`LAZY`]).
    Value = 0,
    /// `make(name)` adds an intrinsic, which defines the name itself (the typed arrays,
    /// `intrinsics.rs`): it is called on assignment too, so that adding the intrinsic later
    /// cannot undo the assignment.
    Intrinsic = 1,
}

/// Defines every name of `names` on the global object of `ctx` as an accessor that calls
/// `make(name)` when read (and, for an intrinsic, when assigned).
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    names: &[&str],
    make: &Function<'js>,
    kind: Made,
) -> rquickjs::Result<()> {
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: `raw` is the live context `ctx` stands for; every value made here is either handed
    // over (`JS_DefinePropertyGetSet` takes its getter and setter) or freed before returning, and
    // `make` is only borrowed (`JS_NewCFunctionData` takes its own reference to each datum).
    #[allow(unsafe_code)]
    unsafe {
        let global = qjs::JS_GetGlobalObject(raw);
        let mut failed = false;
        for name in names {
            let atom = qjs::JS_NewAtomLen(raw, name.as_ptr().cast(), name.len() as _);
            if atom == qjs::JS_ATOM_NULL {
                failed = true;
                break;
            }
            let mut data = [qjs::JS_AtomToString(raw, atom), make.as_raw()];
            let accessor = if qjs::JS_IsException(data[0]) {
                qjs::JS_EXCEPTION
            } else {
                let function = qjs::JS_NewCFunctionData(
                    raw,
                    Some(lazy_global),
                    1,
                    kind as c_int,
                    2,
                    data.as_mut_ptr(),
                );
                qjs::JS_FreeValue(raw, data[0]);
                function
            };
            let defined = !qjs::JS_IsException(accessor)
                && qjs::JS_DefinePropertyGetSet(
                    raw,
                    global,
                    atom,
                    qjs::JS_DupValue(raw, accessor),
                    accessor,
                    CONFIGURABLE,
                ) >= 0;
            qjs::JS_FreeAtom(raw, atom);
            if !defined {
                failed = true;
                break;
            }
        }
        qjs::JS_FreeValue(raw, global);
        if failed {
            return Err(Error::new_from_js("lazy global", "accessor"));
        }
    }
    Ok(())
}

/// The getter (called with no argument: makes the value) and the setter (called with the value)
/// of one lazy global; `data` is `[name, make]`, `kind` a [`Made`]. Either way the name becomes a
/// plain property of the global object holding the value.
///
/// # Safety
/// Called by QuickJS only, as the function `install` made: `data` points at its two values and
/// `values` at `count` arguments, all borrowed for the call.
#[allow(unsafe_code)]
unsafe extern "C" fn lazy_global(
    ctx: *mut qjs::JSContext,
    _this: qjs::JSValue,
    count: c_int,
    values: *mut qjs::JSValue,
    kind: c_int,
    data: *mut qjs::JSValue,
) -> qjs::JSValue {
    // SAFETY: as the function's contract says; each value made here is freed or returned once.
    unsafe {
        let mut name = *data;
        let maker = *data.add(1);
        let made = if count == 0 || kind == Made::Intrinsic as c_int {
            let result = qjs::JS_Call(ctx, maker, qjs::JS_UNDEFINED, 1, &raw mut name);
            if qjs::JS_IsException(result) {
                return result;
            }
            Some(result)
        } else {
            None
        };
        let atom = qjs::JS_ValueToAtom(ctx, name);
        if atom == qjs::JS_ATOM_NULL {
            if let Some(made) = made {
                qjs::JS_FreeValue(ctx, made);
            }
            return qjs::JS_EXCEPTION;
        }
        let global = qjs::JS_GetGlobalObject(ctx);
        let answer = match made {
            // Read: the intrinsic defined the name; its value, read without calling an accessor
            // (were one left, reading it would call this again).
            Some(added) if count == 0 && kind == Made::Intrinsic as c_int => {
                qjs::JS_FreeValue(ctx, added);
                own_value(ctx, global, atom)
            }
            // Read: the value made; assigned: the value given.
            Some(value) if count == 0 => define(ctx, global, atom, value),
            other => {
                if let Some(made) = other {
                    qjs::JS_FreeValue(ctx, made);
                }
                define(ctx, global, atom, qjs::JS_DupValue(ctx, *values))
            }
        };
        qjs::JS_FreeValue(ctx, global);
        qjs::JS_FreeAtom(ctx, atom);
        answer
    }
}

/// Defines `atom` on `global` as a plain property holding `value` (taken) and answers `value`,
/// or the exception.
///
/// # Safety
/// `ctx` live, `global` and `value` values of it, `atom` an atom of its runtime.
#[allow(unsafe_code)]
unsafe fn define(
    ctx: *mut qjs::JSContext,
    global: qjs::JSValue,
    atom: qjs::JSAtom,
    value: qjs::JSValue,
) -> qjs::JSValue {
    // SAFETY: as the function's contract says; `value` is returned or freed once.
    unsafe {
        let defined = qjs::JS_DefinePropertyValue(
            ctx,
            global,
            atom,
            qjs::JS_DupValue(ctx, value),
            WRITABLE | CONFIGURABLE,
        );
        if defined < 0 {
            qjs::JS_FreeValue(ctx, value);
            return qjs::JS_EXCEPTION;
        }
        value
    }
}

/// The value of `global`'s own plain property `atom`, without calling any accessor: `undefined`
/// when there is none or it is an accessor.
///
/// # Safety
/// `ctx` live, `global` a value of it, `atom` an atom of its runtime.
#[allow(unsafe_code)]
unsafe fn own_value(
    ctx: *mut qjs::JSContext,
    global: qjs::JSValue,
    atom: qjs::JSAtom,
) -> qjs::JSValue {
    // SAFETY: as the function's contract says; the value found is returned, so given on.
    match unsafe { own_property(ctx, global, atom) } {
        OwnProperty::Thrown => qjs::JS_EXCEPTION,
        OwnProperty::Missing => qjs::JS_UNDEFINED,
        OwnProperty::Found { value, .. } => value,
    }
}

/// An object's own property, as [`own_property`] reads it (a value found is the caller's to
/// free: `JSValue` has no `Drop`).
#[must_use]
pub(crate) enum OwnProperty {
    /// None by that name.
    Missing,
    /// Reading it threw (the exception is pending in the context).
    Thrown,
    /// Its value (`undefined` for an accessor), the caller's to free, and whether it is an
    /// accessor.
    Found { value: qjs::JSValue, accessor: bool },
}

/// `object`'s own property `atom`, read without calling any accessor (its getter and setter,
/// when it has them, are freed here): the one place a property descriptor's three values are
/// taken apart.
///
/// # Safety
/// `ctx` live, `object` a value of it, `atom` an atom of its runtime.
#[allow(unsafe_code)]
pub(crate) unsafe fn own_property(
    ctx: *mut qjs::JSContext,
    object: qjs::JSValue,
    atom: qjs::JSAtom,
) -> OwnProperty {
    // SAFETY: as the function's contract says; a found descriptor's three values are each
    // given on (the value) or freed (the getter and setter) once.
    unsafe {
        let mut descriptor = std::mem::MaybeUninit::<qjs::JSPropertyDescriptor>::uninit();
        match qjs::JS_GetOwnProperty(ctx, descriptor.as_mut_ptr(), object, atom) {
            found if found < 0 => OwnProperty::Thrown,
            0 => OwnProperty::Missing,
            _ => {
                let descriptor = descriptor.assume_init();
                qjs::JS_FreeValue(ctx, descriptor.getter);
                qjs::JS_FreeValue(ctx, descriptor.setter);
                OwnProperty::Found {
                    value: descriptor.value,
                    accessor: descriptor.flags & GETSET != 0,
                }
            }
        }
    }
}

// QuickJS's flag of an accessor property (a small constant: the cast is exact).
#[allow(clippy::cast_possible_wrap)]
const GETSET: c_int = qjs::JS_PROP_GETSET as c_int;
