//! The engine's tests: limits, the lazy globals, and Node's built-in modules computing real
//! values.

use super::*;
use crate::worker::testing::*;

/// Mapping an error can itself throw (a `BigInt` in `errors`, a throwing `message` getter);
/// the exception it leaves is per runtime and would keep the spent context alive into the
/// next call. The call clears it and the runtime is not reused.
#[test]
fn an_exception_left_by_error_mapping_costs_the_runtime() {
    for code in [
        "module.exports = () => { throw new BadRequestError({ amount: 10n }); };",
        "module.exports = () => { const e = new Error('x'); \
         Object.defineProperty(e, 'message', { get() { throw { leak: globalThis }; } }); throw e; };",
    ] {
        let mut engine = engine();
        let (outcome, discard) = engine.run(&call(code));
        assert!(outcome.is_err(), "{code}");
        assert!(discard, "{code}");
    }
    // Words are not a limit: a thrown "out of memory" is the code's own error.
    let mut forged = engine();
    let (outcome, _) = forged.run(&call(
        "module.exports = () => { throw new Error('out of memory'); };",
    ));
    assert!(
        matches!(&outcome, Err(CodeError::Thrown { status: 500, message, .. }) if message == "out of memory"),
        "{outcome:?}"
    );
    // A plain throw keeps it.
    let mut engine = engine();
    let (outcome, discard) = engine.run(&call(
        "module.exports = () => { throw new BadRequestError('no'); };",
    ));
    assert!(matches!(
        outcome,
        Err(CodeError::Thrown { status: 400, .. })
    ));
    assert!(!discard);
    assert!(!engine.finish());
}

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

/// The typed arrays are added to a call's context when first used (`intrinsics.rs`): read, assigned
/// or needed by a built-in module. Once added they are QuickJS's own, the context has every global
/// a full QuickJS context has, and a getter called again (which adds nothing twice) leaves nothing
/// behind after the call.
#[test]
fn typed_arrays_are_added_on_first_use() {
    let mut engine = engine();
    let full: Vec<String> = Context::full(&engine.runtime)
        .unwrap_or_else(|e| panic!("{e}"))
        .with(|ctx| ctx.eval("Object.getOwnPropertyNames(globalThis)"))
        .unwrap_or_else(|e| panic!("{e}"));
    let (outcome, _) = engine.run(&call(
        "module.exports = () => {
           const getter = Object.getOwnPropertyDescriptor(globalThis, 'Uint16Array').get;
           const before = typeof getter;
           const bytes = new Uint8Array([1, 2, 3]);
           const checks = [
             bytes instanceof Uint8Array && bytes.length === 3,
             Object.getPrototypeOf(Uint8Array) === Object.getPrototypeOf(Float64Array),
             Uint8Array.prototype.toString === Array.prototype.toString,
             ArrayBuffer.isView(new DataView(new ArrayBuffer(2))),
             typeof Atomics.add === 'function',
             Object.getOwnPropertyDescriptor(globalThis, 'Int32Array').value === Int32Array,
             getter() === Uint16Array && getter() === Uint16Array,
           ];
           return { before, checks, names: Object.getOwnPropertyNames(globalThis) };
         };",
    ));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(value["before"], "function");
    assert_eq!(
        value["checks"],
        serde_json::json!([true, true, true, true, true, true, true])
    );
    let names: Vec<String> = serde_json::from_value(value["names"].clone()).unwrap_or_default();
    let missing: Vec<&String> = full.iter().filter(|n| !names.contains(n)).collect();
    assert!(missing.is_empty(), "{missing:?}");
    assert!(!engine.finish());
    assert_eq!(engine.runtime.memory_usage().obj_count, 0);
    // Assigned before it is read; needed first by a built-in module.
    for (code, expected) in [
        (
            "module.exports = () => { Int8Array = 5; return [Int8Array, new Uint8Array(2).length]; };",
            serde_json::json!([5, 2]),
        ),
        (
            "module.exports = () => [require('crypto').createHash('sha256').update('x').digest().length,              Buffer.from('ab') instanceof Uint8Array];",
            serde_json::json!([32, true]),
        ),
    ] {
        let (outcome, _) = engine.run(&call(code));
        assert_eq!(
            outcome.map_err(|e| format!("{e:?}")),
            Ok(expected),
            "{code}"
        );
        assert!(!engine.finish());
        assert_eq!(engine.runtime.memory_usage().obj_count, 0, "{code}");
    }
}

/// `Date`, the maps and sets, and the weak references are added on first use as the typed arrays
/// are: read, assigned, or needed by a built-in module (whose code uses `Map`) even after the
/// code deleted the name; once added they are QuickJS's own.
#[test]
fn date_maps_and_weak_references_are_added_on_first_use() {
    let mut engine = engine();
    let (outcome, _) = engine.run(&call(
        "module.exports = () => {
           const before = ['Date', 'Map', 'Set', 'WeakMap', 'WeakSet', 'WeakRef',
             'FinalizationRegistry'].map((n) => typeof Object.getOwnPropertyDescriptor(globalThis, n).get);
           const m = new Map([[1, 'a']]);
           const checks = [
             new Date(0).toISOString() === '1970-01-01T00:00:00.000Z',
             typeof Date.now() === 'number' && JSON.stringify({ d: new Date(0) }).includes('1970'),
             m.get(1) === 'a' && [...m.keys()][0] === 1 && m instanceof Map,
             new Set([1, 1, 2]).size === 2 && Object.getPrototypeOf(new Set().values()) !== null,
             new WeakMap([[m, 1]]).get(m) === 1 && new WeakSet([m]).has(m),
             new WeakRef(m).deref() === m && typeof new FinalizationRegistry(() => {}).register === 'function',
             Object.getOwnPropertyDescriptor(globalThis, 'Map').value === Map,
             Map.groupBy([1, 2, 3], (x) => x % 2).get(1).length === 2,
           ];
           return { before, checks };
         };",
    ));
    let value = outcome.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(value["before"], Json::from(vec!["function"; 7]));
    assert_eq!(value["checks"], Json::from(vec![true; 8]));
    assert!(!engine.finish());
    assert_eq!(engine.runtime.memory_usage().obj_count, 0);
    for (code, expected) in [
        // Assigned before it is read.
        (
            "module.exports = () => { Date = 5; Set = 6; return [Date, Set, new Map().size]; };",
            serde_json::json!([5, 6, 0]),
        ),
        // Deleted, then a built-in module (the globals', which uses `Map`) needs it.
        (
            "module.exports = () => { delete globalThis.Map; delete globalThis.Date; \
             let timer = setTimeout(() => {}, 1); clearTimeout(timer); \
             return [typeof Map, typeof Date, typeof require('util').inspect]; };",
            serde_json::json!(["function", "function", "function"]),
        ),
        // Refused while one of the group's names cannot be deleted, leaving the others as
        // they were.
        (
            "module.exports = () => { Object.defineProperty(globalThis, 'Set', \
             { value: 1, configurable: false }); let why; \
             try { new Map(); } catch (e) { why = e.message; } \
             return [why, typeof Object.getOwnPropertyDescriptor(globalThis, 'Map').get]; };",
            serde_json::json!([
                "Map, Set, WeakMap and WeakSet cannot be added: one of their names cannot be deleted",
                "function"
            ]),
        ),
        // Refused on a global object code made non-extensible, in that call only.
        (
            "module.exports = () => { Object.preventExtensions(globalThis); \
             try { new Map(); return 'added'; } catch (e) { return e.message; } };",
            serde_json::json!(
                "Map, Set, WeakMap and WeakSet cannot be added: the global object is not extensible"
            ),
        ),
    ] {
        let (outcome, _) = engine.run(&call(code));
        assert_eq!(
            outcome.map_err(|e| format!("{e:?}")),
            Ok(expected),
            "{code}"
        );
        engine.finish();
        let (next, _) = engine.run(&call("module.exports = () => new Map([[1, 2]]).get(1);"));
        assert_eq!(next.ok(), Some(Json::from(2)), "after {code}");
        assert!(!engine.finish());
    }
}

/// QuickJS's add of the typed arrays defines its names with no check (aborting the process on one
/// it finds in its way) and reads `Uint8Array` and `Array.prototype.toString` as it goes: code that
/// prepared the global object against it gets a `TypeError` in its own call, and the worker goes
/// on; what it can clear out of the way (its own assignments, a deleted name) it clears.
#[test]
fn typed_arrays_refuse_a_global_object_set_against_them() {
    let mut engine = engine();
    for (code, answer) in [
        (
            "module.exports = () => { Object.defineProperty(globalThis, 'Uint8Array',              { value: { prototype: { toHex: 0 } }, configurable: false }); return new Int8Array(1); };",
            None,
        ),
        (
            "module.exports = () => { Object.defineProperty(Array.prototype, 'toString',              { get() { globalThis.Atomics = 1; return () => ''; }, configurable: true });              return new Int8Array(1); };",
            None,
        ),
        (
            "module.exports = () => { Object.preventExtensions(globalThis); return require('crypto').randomUUID(); };",
            None,
        ),
        (
            "module.exports = () => { delete globalThis.Atomics; globalThis.Atomics = 1;              Object.defineProperty(globalThis, 'Float32Array', { value: 2, configurable: true });              return [new Uint8Array(2).length, typeof Atomics.add, typeof Float32Array]; };",
            Some(serde_json::json!([2, "function", "function"])),
        ),
    ] {
        let (outcome, _) = engine.run(&call(code));
        match answer {
            Some(expected) => {
                assert_eq!(
                    outcome.map_err(|e| format!("{e:?}")),
                    Ok(expected),
                    "{code}"
                );
            }
            None => assert!(
                matches!(&outcome, Err(CodeError::Thrown { message, .. }) if message.contains("typed arrays cannot be added")),
                "{code}: {outcome:?}"
            ),
        }
        engine.finish();
        let (next, _) = engine.run(&call("module.exports = () => new Uint16Array(3).length;"));
        assert_eq!(next.ok(), Some(Json::from(3)), "after {code}");
        assert!(!engine.finish());
    }
}

/// A module that is not there fails the call with a 500 naming it, at load or in the
/// handler.
#[test]
fn a_missing_module_is_a_500_naming_it() {
    for code in [
        "const cluster = require('cluster'); module.exports = () => 1;",
        "module.exports = () => require('left-pad')('x', 3);",
    ] {
        let mut engine = engine();
        let (outcome, _) = engine.run(&call(code));
        assert!(
            matches!(&outcome, Err(CodeError::Thrown { status: 500, message, .. })
                if message.starts_with("Cannot find module '")),
            "{code}: {outcome:?}"
        );
    }
}

/// A call that runs out of memory and catches the engine's error, or makes QuickJS unable to
/// allocate the error at all, still costs its runtime; the second is answered as the memory
/// limit, not as a bare thrown value.
#[test]
fn running_out_of_memory_costs_the_runtime_even_when_caught() {
    let mut first = engine();
    let (outcome, discard) = first.run(&call(
        "module.exports = () => { const a = []; try { for (;;) a.push(new Array(1000).fill(1)); } catch (e) { return a.length > 0; } };",
    ));
    assert_eq!(outcome.ok(), Some(Json::Bool(true)));
    assert!(
        discard,
        "a caught out-of-memory error still discards the runtime"
    );
    let mut second = engine();
    let (outcome, discard) = second.run(&call(
        "module.exports = () => { for (let i = 0; i < 1e7; i++) setTimeout(() => {}, 1e9); };",
    ));
    assert!(discard);
    assert!(
        matches!(&outcome, Err(CodeError::Limit(m)) if m.contains("MiB")),
        "{outcome:?}"
    );
}

/// A thrown message is bounded as it will travel: JSON-escaped.
#[test]
fn a_thrown_message_is_bounded_once_escaped() {
    let mut engine = engine();
    let (outcome, discard) = engine.run(&call(
        "module.exports = () => { throw new Error('\\u0001'.repeat(900000)); };",
    ));
    assert!(
        matches!(&outcome, Err(CodeError::Limit(m)) if m.contains("1 MiB")),
        "{outcome:?}"
    );
    assert!(discard, "a limit costs the runtime");
}

/// Nothing of a call outlives it: not its memory, not one of its objects. (rquickjs keeps the
/// prototype of its host-function class per runtime, from the first context that asks for it;
/// were that a call's context, the call's heap would stay for the runtime's life.)
#[test]
fn a_call_leaves_nothing_behind_in_the_runtime() {
    let mut engine = engine();
    let objects = |e: &Engine| e.runtime.memory_usage().obj_count;
    // Between calls the runtime holds no object at all: the kept names are atoms (`names.rs`).
    let initial = objects(&engine);
    assert_eq!(initial, 0);
    let (first, _) = engine.run(&call(
        "module.exports = () => { globalThis.kept = 'x'.repeat(9 << 20); \
         globalThis.sentinel = { a: 1 }; return globalThis.kept.length; };",
    ));
    assert_eq!(first.ok(), Some(Json::from(9 << 20)));
    assert!(!engine.finish(), "nothing pending");
    assert_eq!(objects(&engine), initial);
    // A call that uses the host functions of every kind: `req.svc`, timers, crypto, `require`.
    let request = serde_json::json!({"args": {}});
    let (used, _) = engine.run(&Call {
        tenant: uuid::Uuid::nil(),
        code: "module.exports = async (req) => { \
               await new Promise((r) => setTimeout(r, 1)); \
               const c = require('crypto'); \
               const h = c.createHash('sha256').update(Buffer.from('x')).digest('hex'); \
               const failed = await req.svc.tokens.retrieve('x').catch((e) => e.status); \
               return [h.length, failed, c.randomUUID().length, new URL('https://a.b/c').host]; };",
        request: &request,
        svc: true,
        check: false,
    });
    assert_eq!(used.ok(), Some(serde_json::json!([64, 500, 36, "a.b"])));
    assert!(!engine.finish());
    assert_eq!(objects(&engine), initial);
    // A second call has as much memory as the first had.
    let (again, discard) = engine.run(&call(
        "module.exports = () => (typeof sentinel) + ':' + 'y'.repeat(9 << 20).length;",
    ));
    assert_eq!(
        again.map_err(|e| format!("{e:?}")),
        Ok(Json::from(format!("undefined:{}", 9 << 20)))
    );
    assert!(!discard);
    assert!(!engine.finish());
    assert_eq!(objects(&engine), initial);
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

/// Code that grows the runtime's tables (names, here symbols: QuickJS never shrinks them) costs
/// the runtime, so the next call has its whole memory limit.
#[test]
fn a_call_that_grows_the_runtime_costs_it() {
    let mut engine = engine();
    let (made, discard) = engine.run(&call(
        "module.exports = () => { const a = []; \
         for (let i = 0; i < 200000; i++) a.push(Symbol()); return a.length; };",
    ));
    assert_eq!(made.map_err(|e| format!("{e:?}")), Ok(Json::from(200_000)));
    assert!(!discard);
    assert!(engine.finish(), "the runtime grew past its bound");
    // An ordinary call leaves it as it was.
    let mut engine = self::engine();
    let (plain, _) = engine.run(&call(
        "module.exports = () => Object.keys(globalThis).length;",
    ));
    assert!(plain.is_ok());
    assert!(!engine.finish());
}

/// The classes code sees keep their source (packages tell a class from a function by it); the
/// prelude's own functions show none.
#[test]
fn classes_code_sees_keep_their_source() {
    let mut engine = engine();
    let (shown, _) = engine.run(&call(
        "module.exports = () => [Function.prototype.toString.call(URL).startsWith('class'), \
         Function.prototype.toString.call(URLSearchParams).startsWith('class'), \
         Function.prototype.toString.call(require).includes('make(')];",
    ));
    assert_eq!(shown.ok(), Some(serde_json::json!([true, true, false])));
}

/// A module loaded from what the worker compiled for an earlier call is the module `new
/// Function` made before: its state is its own call's, its functions show their source, its
/// file name and lines are those `new Function` gave (two lines of the wrapper before the
/// text: the error is made on the text's fifth), and a NUL in the text is the text's own.
#[test]
fn a_module_compiled_once_is_fresh_in_every_call() {
    let mut engine = engine();
    let code = "let calls = 0;\nconst nul = '\u{0}';\n\
                module.exports = function main() {\n  calls += 1; globalThis.seen = (globalThis.seen || 0) + 1;\n  \
                return { calls, seen: globalThis.seen, nul: nul.length, \
                self: main.toString().startsWith('function main()'), \
                wrapper: typeof exports + typeof require + typeof module + __filename + __dirname, \
                at: new Error('x').stack.split('\\n').find((l) => l.includes('main')).split(':').slice(0, 2).join(':') };\n};";
    assert!(code.contains('\0'));
    let expected = serde_json::json!({"calls": 1, "seen": 1, "nul": 1, "self": true,
        "wrapper": "objectfunctionobject/index.js/", "at": "    at main (<input>:7"});
    for _ in 0..3 {
        let (outcome, _) = engine.run(&Call {
            tenant: uuid::Uuid::nil(),
            code,
            request: &EMPTY,
            svc: false,
            check: false,
        });
        assert_eq!(outcome.unwrap_or_else(|e| panic!("{e:?}")), expected);
        assert!(!engine.finish());
        engine.prepare().unwrap_or_else(|e| panic!("{e}"));
    }
    // A runtime replaced keeps what it compiled, and the module is still fresh.
    let mut renewed = engine.renew().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        renewed
            .code_cache
            .borrow_mut()
            .get(uuid::Uuid::nil(), code)
            .is_some()
    );
    let (outcome, _) = renewed.run(&call(code));
    assert_eq!(outcome.unwrap_or_else(|e| panic!("{e:?}")), expected);
}

/// Code that does not compile is a compile error naming its line, every time it is called,
/// and is never kept.
#[test]
fn code_that_does_not_compile_is_never_kept() {
    let mut engine = engine();
    let code = "// one\n// two\nmodule.exports = () => { return {raw: ; };";
    for _ in 0..2 {
        let (outcome, _) = engine.run(&call(code));
        match outcome {
            Err(CodeError::Compile(m)) => {
                assert!(
                    m.starts_with("SyntaxError: ") && m.ends_with("(line 3)"),
                    "{m}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(!engine.finish());
    }
    assert!(
        engine
            .code_cache
            .borrow_mut()
            .get(uuid::Uuid::nil(), code)
            .is_none()
    ); // An object the code throws is its own error, whatever it holds.
    let (forged, _) = engine.run(&call(
        "module.exports = () => { throw { __tokenvault_compile: 'x' }; };",
    ));
    assert!(
        matches!(forged, Err(CodeError::Thrown { status: 500, .. })),
        "{forged:?}"
    );
}

/// Memory refused while a module compiles (QuickJS's bytecode writer then goes on, leaving a
/// gap in its bytes) is the call's memory limit, and nothing of that compile is kept: whatever
/// the memory left to the compile, a module the worker keeps loads and runs as compiled.
#[test]
fn a_compile_out_of_memory_keeps_nothing() {
    // Many functions, each keeping its source for `toString`: the compile needs memory.
    let mut code = String::from("module.exports = () => 7;\n");
    let mut i = 0;
    while code.len() < 45_000 {
        use std::fmt::Write as _;
        let _ = writeln!(
            code,
            "function f{i}(a, b) {{ return [a, b, `t${{a}}`, {i}]; }}"
        );
        i += 1;
    }
    let mut limited = 0;
    let mut engine = engine();
    // Requests that leave the compile less and less of the 16 MiB.
    for chunks in (760..=1000).step_by(8) {
        let request = Json::Array(vec![Json::from("x".repeat(16 << 10)); chunks]);
        let (outcome, discard) = engine.run(&Call {
            tenant: uuid::Uuid::nil(),
            code: &code,
            request: &request,
            svc: false,
            check: false,
        });
        let kept = engine
            .code_cache
            .borrow_mut()
            .get(uuid::Uuid::nil(), &code)
            .is_some();
        match outcome {
            Ok(v) => assert_eq!(v, Json::from(7)),
            Err(CodeError::Limit(m)) => {
                assert!(m.contains("MiB"), "{m}");
                limited += 1;
            }
            Err(CodeError::Internal(_)) => {}
            Err(e) => panic!("{chunks}: {e:?}"),
        }
        if kept {
            // What was kept loads and runs with the whole limit.
            let mut fresh = engine.renew().unwrap_or_else(|e| panic!("{e}"));
            let (again, _) = fresh.run(&call(&code));
            assert_eq!(
                again.map_err(|e| format!("{e:?}")),
                Ok(Json::from(7)),
                "{chunks}"
            );
            fresh.code_cache.borrow_mut().clear();
        }
        if discard || engine.finish() {
            engine = engine.renew().unwrap_or_else(|e| panic!("{e}"));
        }
    }
    assert!(limited > 0, "no request left the compile short of memory");
}
