//! The tenant's module: a missing module required, classes that keep their source, and the
//! bytecode the worker keeps (`code_cache.rs`): fresh in every call, never kept when the code
//! does not compile or the compile ran out of memory.

use tokenvault_domain::ports::code::CodeError;

use crate::worker::testing::*;

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
