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

/// Defines every name of [`LAZY`] on the global object of `ctx` as an accessor that calls
/// `make(name)` when read.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, make: &Function<'js>) -> rquickjs::Result<()> {
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: `raw` is the live context `ctx` stands for; every value made here is either handed
    // over (`JS_DefinePropertyGetSet` takes its getter and setter) or freed before returning, and
    // `make` is only borrowed (`JS_NewCFunctionData` takes its own reference to each datum).
    #[allow(unsafe_code)]
    unsafe {
        let global = qjs::JS_GetGlobalObject(raw);
        let mut failed = false;
        for name in LAZY {
            let atom = qjs::JS_NewAtomLen(raw, name.as_ptr().cast(), name.len() as _);
            if atom == qjs::JS_ATOM_NULL {
                failed = true;
                break;
            }
            let mut data = [qjs::JS_AtomToString(raw, atom), make.as_raw()];
            let accessor = if qjs::JS_IsException(data[0]) {
                qjs::JS_EXCEPTION
            } else {
                let function =
                    qjs::JS_NewCFunctionData(raw, Some(lazy_global), 1, 0, 2, data.as_mut_ptr());
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
/// of one lazy global; `data` is `[name, make]`. Either way the name becomes a plain property of
/// the global object holding the value.
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
    _magic: c_int,
    data: *mut qjs::JSValue,
) -> qjs::JSValue {
    // SAFETY: as the function's contract says; each value made here is freed or returned once.
    unsafe {
        let mut name = *data;
        let make = *data.add(1);
        let value = if count == 0 {
            let result = qjs::JS_Call(ctx, make, qjs::JS_UNDEFINED, 1, &raw mut name);
            if qjs::JS_IsException(result) {
                return result;
            }
            result
        } else {
            qjs::JS_DupValue(ctx, *values)
        };
        let atom = qjs::JS_ValueToAtom(ctx, name);
        if atom == qjs::JS_ATOM_NULL {
            qjs::JS_FreeValue(ctx, value);
            return qjs::JS_EXCEPTION;
        }
        let global = qjs::JS_GetGlobalObject(ctx);
        let defined = qjs::JS_DefinePropertyValue(
            ctx,
            global,
            atom,
            qjs::JS_DupValue(ctx, value),
            WRITABLE | CONFIGURABLE,
        );
        qjs::JS_FreeValue(ctx, global);
        qjs::JS_FreeAtom(ctx, atom);
        if defined < 0 {
            qjs::JS_FreeValue(ctx, value);
            return qjs::JS_EXCEPTION;
        }
        value
    }
}
