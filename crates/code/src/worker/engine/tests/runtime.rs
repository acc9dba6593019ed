//! What a call costs its runtime: an exception left while mapping its error, running out of
//! memory (even when caught), a thrown message past the limit once escaped, tables grown past
//! their bound; and that nothing of a call outlives it in the runtime.

use tokenvault_domain::ports::code::CodeError;

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
