//! QuickJS's intrinsics added to a call's context on first use (`intrinsics.rs`): the typed
//! arrays, `Date`, the maps and sets and the weak references, and a global object code set
//! against them.

use rquickjs::Context;
use tokenvault_domain::ports::code::CodeError;

use crate::worker::testing::*;

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
