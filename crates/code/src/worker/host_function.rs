//! Host functions (Rust closures JavaScript calls), made so that no context shares anything
//! with another.
//!
//! rquickjs's `Function::new` gives a host function the prototype of its host-function class,
//! which rquickjs keeps once per runtime, taken from the first context that made one. Were that
//! first context a call's, the call's whole heap would stay alive (and count against the memory
//! limit) for the runtime's life, and every later call's host functions would inherit from one
//! object all calls share. [`host_function`] makes the same object with its own context's
//! `Function.prototype` instead, and never asks rquickjs for the class's prototype.

use rquickjs::class::Class;
use rquickjs::function::{IntoJsFunc, Params, RustFunction};
use rquickjs::{Ctx, Error, Function};

/// A host function whose prototype is its context's own `Function.prototype`: what
/// `Function::new` makes, but for the prototype.
pub(crate) fn host_function<'js, P, F>(ctx: &Ctx<'js>, f: F) -> rquickjs::Result<Function<'js>>
where
    F: IntoJsFunc<'js, P> + 'js,
{
    let call = RustFunction(Box::new(move |params: Params<'_, 'js>| {
        params.check_params(F::param_requirements())?;
        f.call(params)
    }));
    let object = Class::instance_proto(call, Function::prototype(ctx.clone()))?;
    object
        .into_value()
        .into_function()
        .ok_or_else(|| Error::new_from_js("object", "function"))?
        .with_length(F::param_requirements().min())
}
