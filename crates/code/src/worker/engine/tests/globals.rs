//! The globals a call's context has: made on first use (prelude.js, `lazy.rs`) and behaving as if
//! made up front, and the host functions, made by the first built-in module loaded and
//! inheriting from their own context.

use rquickjs::{Context, Function, Object};
use tokenvault_domain::ports::code::CodeError;

use crate::worker::host_calls::svc_host;
use crate::worker::testing::*;

/// The globals are made on first use (prelude.js): every listed name is there when read,
/// whatever the spelling of the read, can be replaced, and behaves as if made up front.
#[test]
fn globals_made_on_first_use_behave_as_made_up_front() {
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(
        "module.exports = async () => {
           // The host's timer callback is not a global: replacing the name changes nothing.
           globalThis.__fireTimer = 5;
           const seen = [typeof console.log, typeof setTimeout, typeof clearTimeout,
             typeof crypto.randomUUID, typeof TextEncoder, typeof globalThis.TextDecoder,
             'BadRequestError' in globalThis, typeof globalThis['CustomHttpResponseError'],
             typeof NoSuchGlobal];
           const bytes = new TextEncoder().encode('zürich');
           const back = new TextDecoder().decode(bytes);
           const fired = await new Promise((resolve) => setTimeout(resolve, 1, 'fired'));
           const cleared = setTimeout(() => { throw new Error('cleared timer ran'); }, 1);
           clearTimeout(cleared);
           RateLimitError = 'replaced';
           let missing;
           try { missing = NoSuchGlobal; } catch (e) { missing = e.name; }
           return { seen, length: bytes.length, back, fired, replaced: RateLimitError, missing,
                    uuid: crypto.randomUUID().length };
         };",
    ));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        value,
        serde_json::json!({
            "seen": ["function", "function", "function", "function", "function", "function",
                     true, "function", "undefined"],
            "length": 7, "back": "zürich", "fired": "fired", "replaced": "replaced",
            "missing": "ReferenceError", "uuid": 36
        })
    );
    assert!(!engine.finish());
    // A class made on first use still maps to its status.
    let (outcome, _) = engine.run(&call(
        "module.exports = () => { throw new AuthorizationError({ why: 'no' }); };",
    ));
    assert!(
        matches!(&outcome, Err(CodeError::Thrown { status: 403, errors: Some(e), .. }) if e["why"] == "no"),
        "{outcome:?}"
    );
}

/// The lazy globals' accessors (`lazy.rs`): one function is getter and setter, assigning a name
/// before it is read replaces it, the getter taken off its descriptor still works, a deleted one
/// is gone, and once made a name is a plain writable, configurable, non-enumerable property.
#[test]
fn lazy_globals_become_plain_properties() {
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(
        "module.exports = () => {
           const before = Object.getOwnPropertyDescriptor(globalThis, 'URL');
           const accessor = typeof before.get === 'function' && before.get === before.set
             && !before.enumerable && before.configurable;
           const host = new URL('https://a.b/c').host;
           const after = Object.getOwnPropertyDescriptor(globalThis, 'URL');
           const plain = 'value' in after && after.writable && after.configurable && !after.enumerable;
           Buffer = 7;
           const again = before.get.call(undefined) === URL && typeof URL === 'function';
           const set = before.set.call(undefined, 'x');
           delete globalThis.TextEncoder;
           let gone;
           try { TextEncoder; } catch (e) { gone = e.name; }
           return { accessor, host, plain, buffer: Buffer, again, set, url: URL, gone };
         };",
    ));
    assert_eq!(
        outcome.unwrap_or_else(|e| panic!("{e:?}")),
        serde_json::json!({"accessor": true, "host": "a.b", "plain": true, "buffer": 7,
                           "again": true, "set": "x", "url": "x", "gone": "ReferenceError"})
    );
    assert!(!engine.finish());
}

/// A context's host functions are made when its first built-in module loads, whichever it is:
/// the `req.svc` client's, or the globals' (here through `setTimeout` and `require`).
#[test]
fn host_functions_are_made_by_the_first_module_loaded() {
    let mut engine = engine();
    let request = serde_json::json!({"args": {}});
    for code in [
        "module.exports = async (req) => [await req.svc.tokens.retrieve('x').catch((e) => e.status), \
         await new Promise((r) => setTimeout(() => r(require('crypto').randomUUID().length), 1))];",
        "module.exports = async (req) => [await new Promise((r) => setTimeout(() => r(500), 1)), \
         require('crypto').randomUUID().length];",
    ] {
        let (outcome, _) = engine.run(&Call {
            tenant: uuid::Uuid::nil(),
            code,
            request: &request,
            svc: true,
            check: false,
        });
        assert_eq!(
            outcome.map_err(|e| format!("{e:?}")),
            Ok(serde_json::json!([500, 36])),
            "{code}"
        );
        assert!(!engine.finish());
    }
}

/// A context's host functions inherit from that context's `Function.prototype`, not from one
/// rquickjs keeps for the runtime (shared by every context).
#[test]
fn host_functions_inherit_from_their_own_context() {
    let engine = engine();
    for _ in 0..2 {
        let context = Context::full(&engine.runtime).unwrap_or_else(|e| panic!("{e}"));
        context.with(|ctx| {
            let own = Function::prototype(ctx.clone());
            let functions = Object::new(ctx.clone()).unwrap_or_else(|e| panic!("{e}"));
            crate::node::crypto::hash::install(&ctx, &functions).unwrap_or_else(|e| panic!("{e}"));
            let digest: Function = functions.get("digest").unwrap_or_else(|e| panic!("{e}"));
            assert!(digest.get_prototype() == Some(own.clone()));
            let svc = svc_host(&ctx, Rc::new(NoHost)).unwrap_or_else(|e| panic!("{e}"));
            assert!(svc.get_prototype() == Some(own.clone()));
            assert_eq!(svc.get::<_, usize>("length").ok(), Some(2));
        });
    }
    // What rquickjs alone gives them: the first context's, in the second.
    let first = Context::full(&engine.runtime).unwrap_or_else(|e| panic!("{e}"));
    first.with(|ctx| {
        #[allow(clippy::disallowed_methods)]
        Function::new(ctx, || ()).unwrap_or_else(|e| panic!("{e}"));
    });
    let second = Context::full(&engine.runtime).unwrap_or_else(|e| panic!("{e}"));
    second.with(|ctx| {
        #[allow(clippy::disallowed_methods)]
        let raw = Function::new(ctx.clone(), || ()).unwrap_or_else(|e| panic!("{e}"));
        assert!(raw.get_prototype() != Some(Function::prototype(ctx.clone())));
    });
}

/// `Error.prepareStackTrace` (V8's, which packages such as `depd` set to read a stack's frames)
/// works, but its call sites name no function and no `this`: QuickJS's own hand out each
/// frame's function, the prelude's and the host's among them (attack review of 7d18301). Code
/// that replaced `Array.prototype` methods to catch the raw list still gets no function.
#[test]
fn call_sites_hand_out_no_function() {
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(
        "module.exports = () => {
           let leaked = [];
           Array.prototype.map = function () { leaked.push(this); return []; };
           Error.prepareStackTrace = (error, sites) => sites;
           const set = Error.prepareStackTrace;
           const sites = [].concat.call([], ...[1].flatMap(() => [new Error('x').stack]));
           const found = [];
           for (const site of sites) {
             found.push(typeof site.getFunction(), typeof site.getThis());
           }
           for (const list of leaked) for (const site of list) found.push(typeof site.getFunction());
           const first = sites.find((s) => s.getFileName() === '<input>');
           Error.prepareStackTrace = undefined;
           return { found: [...new Set(found)], some: sites.length > 1, line: first.getLineNumber(),
                    named: typeof first.getFunctionName(), kept: set !== undefined,
                    plain: typeof new Error('y').stack, native: typeof sites[0].isNative(),
                    shown: String(first).startsWith('<anonymous> (<input>:8:') };
         };",
    ));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        value,
        serde_json::json!({"found": ["undefined"], "some": true, "line": 8, "named": "object",
                           "kept": true, "plain": "string", "native": "boolean", "shown": true})
    );
}
