//! The runner against real QuickJS in real worker processes: the CommonJS contract, each sandbox
//! limit ending within its bound while other calls keep answering, the escapes that must fail,
//! and the globals (the process boundary itself: `boundary.rs`).

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokenvault_code::QuickJsRunner;
use tokenvault_domain::ports::code::{CodeCall, CodeError, CodeRunner};
use uuid::Uuid;

mod common;

use common::{TIMEOUT, settings};

async fn runner() -> QuickJsRunner {
    QuickJsRunner::start(settings(2)).await.unwrap()
}

/// A call of a tenant of its own.
fn call(code: &str, request: Value) -> CodeCall {
    CodeCall {
        tenant_id: Uuid::new_v4(),
        code: code.into(),
        request,
        trace_id: Some("test".into()),
        svc: None,
        fetch: None,
        console: None,
    }
}

async fn run(r: &QuickJsRunner, code: &str) -> Result<Value, CodeError> {
    r.run(call(code, json!({"args": {"x": 1}}))).await
}

#[tokio::test]
async fn the_commonjs_contract() {
    let r = runner().await;
    let echo = "module.exports = async function (req) { return { args: req.args, n: 1 + 1 }; };";
    assert_eq!(
        run(&r, echo).await.unwrap(),
        json!({"args": {"x": 1}, "n": 2})
    );
    let plain = "module.exports = function (req) { return req.args.x * 10; };";
    assert_eq!(run(&r, plain).await.unwrap(), json!(10));
    let awaits = r"module.exports = async (req) => {
        const later = await new Promise((ok) => setTimeout(() => ok('done'), 20));
        return { later, v: await Promise.resolve(req.args.x) };
    };";
    assert_eq!(
        run(&r, awaits).await.unwrap(),
        json!({"later": "done", "v": 1})
    );
    let nothing = "module.exports = async () => {};";
    assert_eq!(run(&r, nothing).await.unwrap(), Value::Null);
    let exports = "exports.x = 1;";
    assert!(matches!(
        run(&r, exports).await,
        Err(CodeError::Thrown { status: 500, .. })
    ));
}

/// Code is stored as given; one that does not compile fails its call with the error and its
/// line (a 422), and never runs.
#[tokio::test]
async fn code_that_does_not_compile_fails_its_call_naming_the_line() {
    let r = runner().await;
    let outcome = run(
        &r,
        "// first\nmodule.exports = async function (req) {\n  return {raw: ; };",
    )
    .await;
    match &outcome {
        Err(CodeError::Compile(m)) => {
            assert!(m.contains("SyntaxError") && m.contains("line 3"), "{m}");
        }
        other => panic!("{other:?}"),
    }
    // Code that closes the loader's wrapper early runs as it is loaded: in its own call's
    // context, under the same deadline, like any code. Nothing outside that context is reached.
    let outcome = run(&r, "}); while (true) {} (function () {").await;
    assert!(matches!(outcome, Err(CodeError::Limit(_))), "{outcome:?}");
    let outcome = run(
        &r,
        "}); globalThis.x = typeof __host + typeof toHost; (function () {",
    )
    .await;
    assert!(
        matches!(outcome, Err(CodeError::Thrown { .. })),
        "{outcome:?}"
    );
    // A SyntaxError the code throws while running is its own error, not a compile error.
    let outcome = run(&r, "module.exports = () => JSON.parse('{');").await;
    assert!(
        matches!(outcome, Err(CodeError::Thrown { status: 500, .. })),
        "{outcome:?}"
    );
}

/// Each limit ends its call within its bound, and a trivial call on the other worker answers
/// meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_limit_ends_the_call_and_others_keep_answering() {
    let r = std::sync::Arc::new(runner().await);
    for (name, code) in [
        (
            "infinite loop",
            "module.exports = () => { while (true) {} };",
        ),
        (
            "one-hour timer",
            "module.exports = () => new Promise((ok) => setTimeout(ok, 3600000));",
        ),
        (
            "async loop",
            "module.exports = async () => { for (;;) { await Promise.resolve(); } };",
        ),
    ] {
        let started = Instant::now();
        let runaway = {
            let r = r.clone();
            tokio::spawn(async move { run(&r, code).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(
            run(&r, "module.exports = () => 'ok';").await.unwrap(),
            json!("ok"),
            "{name}: a trivial call answers meanwhile"
        );
        assert!(
            !runaway.is_finished(),
            "{name}: answered while the runaway still ran"
        );
        let outcome = runaway.await.unwrap();
        assert!(
            matches!(outcome, Err(CodeError::Limit(_))),
            "{name}: {outcome:?}"
        );
        // Ended by its own deadline, not by the async side's margin (2 s) or never.
        let took = started.elapsed();
        assert!(
            took >= TIMEOUT && took < TIMEOUT * 3,
            "{name} took {took:?}"
        );
    }
    let bomb =
        "module.exports = () => { const a = []; for (;;) a.push('x'.repeat(1e5) + a.length); };";
    assert!(matches!(run(&r, bomb).await, Err(CodeError::Limit(m)) if m.contains("MiB")));
    let big = "module.exports = () => 'x'.repeat(2 * 1024 * 1024);";
    assert!(matches!(run(&r, big).await, Err(CodeError::Limit(m)) if m.contains("returned")));
    // The workers are still good afterwards.
    assert_eq!(
        run(&r, "module.exports = () => 7;").await.unwrap(),
        json!(7)
    );
}

#[tokio::test]
async fn the_sandbox_has_no_way_out_and_calls_share_nothing() {
    let r = runner().await;
    for code in [
        "module.exports = () => require('fs').readFileSync('/etc/passwd', 'utf8');",
        "module.exports = async () => (await fetch('http://127.0.0.1/')).status;",
        "module.exports = () => std.getenv('HOME');",
        "module.exports = () => os.exec(['ls']);",
        // No module loader.
        "module.exports = async () => Object.keys(await import('fs'));",
        "module.exports = async () => __log('info', 'x');",
    ] {
        let outcome = run(&r, code).await;
        assert!(
            matches!(outcome, Err(CodeError::Thrown { status: 500, .. })),
            "{code}: {outcome:?}"
        );
    }
    // Node's `process` is there, with no environment.
    assert_eq!(
        run(&r, "module.exports = () => process.env;")
            .await
            .unwrap(),
        json!({})
    );
    // The prelude module the host loads exports nothing code could use.
    let prelude = "module.exports = async () => Object.keys(await import('tokenvault:prelude'));";
    assert_eq!(run(&r, prelude).await.unwrap(), json!([]));
    let writes = r"module.exports = () => {
        globalThis.leaked = 'secret'; Object.prototype.polluted = 1; Array.prototype.push = null;
        console.log = () => { throw new Error('hijacked'); };
        return 1;
    };";
    let reads = r"module.exports = () => [typeof leaked, ({}).polluted, typeof [].push,
        (console.log('fine'), 'console ok')];";
    for _ in 0..4 {
        // Enough rounds that both workers ran the writer before a reader.
        assert_eq!(run(&r, writes).await.unwrap(), json!(1));
    }
    for _ in 0..4 {
        assert_eq!(
            run(&r, reads).await.unwrap(),
            json!(["undefined", null, "function", "console ok"])
        );
    }
}

#[tokio::test]
async fn errors_map_to_their_status() {
    let r = runner().await;
    let cases = [
        ("BadRequestError", 400),
        ("AuthenticationError", 401),
        ("InvalidPaymentMethodError", 402),
        ("AuthorizationError", 403),
        ("InvalidReactorConfigurationError", 400),
        ("RateLimitError", 429),
        ("ReactorRuntimeError", 500),
        ("ServiceUnavailableError", 503),
    ];
    for (class, status) in cases {
        // Made on the module's second line: the line passes the prelude's constructor by.
        let code = format!(
            "module.exports = async () => {{\n  throw new {class}({{ field: ['bad'] }});\n}};"
        );
        match run(&r, &code).await {
            Err(CodeError::Thrown {
                status: s,
                errors,
                line,
                ..
            }) => {
                assert_eq!(s, status, "{class}");
                assert_eq!(errors, Some(json!({"field": ["bad"]})), "{class}");
                assert_eq!(line, Some(2), "{class}");
            }
            other => panic!("{class}: {other:?}"),
        }
    }
    let plain = "module.exports = () => { throw new Error('my own words'); };";
    assert_eq!(
        run(&r, plain).await,
        Err(CodeError::Thrown {
            status: 500,
            message: "my own words".into(),
            errors: None,
            line: Some(1),
        })
    );
    // The line is the module's: where a helper of its own made the error, where it called the
    // engine's function that threw; none for a thrown value that is no `Error`.
    for (code, line) in [
        (
            "function check(n) {\n  if (n < 0) throw new TypeError('negative');\n}\n\
             module.exports = () => {\n  check(-1);\n};",
            Some(2),
        ),
        (
            "module.exports = () => {\n\n  return JSON.parse('{');\n};",
            Some(3),
        ),
        ("module.exports = () => { throw 'words'; };", None),
    ] {
        match run(&r, code).await {
            Err(e @ CodeError::Thrown { .. }) => assert_eq!(e.line(), line, "{code}"),
            other => panic!("{code}: {other:?}"),
        }
    }
    let custom = r"module.exports = () => {
        throw new CustomHttpResponseError({ status: 418, headers: { 'x-a': 'b' }, body: { t: 1 } });
    };";
    assert_eq!(
        run(&r, custom).await,
        Err(CodeError::Custom {
            status: 418,
            headers: json!({"x-a": "b"}),
            body: json!({"t": 1})
        })
    );
}

#[tokio::test]
async fn the_globals_of_the_runtime() {
    let r = runner().await;
    let code = r"module.exports = async () => {
        const bytes = new TextEncoder().encode('héllo');
        const timer = setTimeout(() => { throw new Error('cleared timers never fire'); }, 10);
        clearTimeout(timer);
        await new Promise((ok) => setTimeout(ok, 30));
        return {
            b64: btoa('hi'), back: atob('aGk='),
            bytes: bytes.length, text: new TextDecoder().decode(bytes),
            uuid: /^[0-9a-f-]{36}$/.test(crypto.randomUUID()),
        };
    };";
    assert_eq!(
        run(&r, code).await.unwrap(),
        json!({"b64": "aGk=", "back": "hi", "bytes": 6, "text": "héllo", "uuid": true})
    );
}

/// A smoke test: the engine replaces a runtime whose job queue is not empty after a call, so
/// leftover jobs never run against a dropped context in a later call. (Their effect is not
/// observable from JavaScript; this checks that calls after such a one still work.)
#[tokio::test]
async fn nothing_a_call_leaves_queued_runs_in_the_next() {
    let r = runner().await;
    // An endless promise chain and a pending timer, left behind by a call that returned.
    let leaves = r"module.exports = () => {
        (function again() { Promise.resolve().then(again); })();
        return 'left';
    };";
    for _ in 0..3 {
        assert_eq!(run(&r, leaves).await.unwrap(), json!("left"));
    }
    // Were the chains still queued, these would spend their whole deadline running them.
    for _ in 0..4 {
        let started = Instant::now();
        assert_eq!(
            run(
                &r,
                "module.exports = async () => { await null; return 'clean'; };"
            )
            .await
            .unwrap(),
            json!("clean")
        );
        assert!(
            started.elapsed() < TIMEOUT,
            "a leftover job ran in a later call"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_refuses_calls_instead_of_queueing_them() {
    let r = std::sync::Arc::new(QuickJsRunner::start(settings(1)).await.unwrap());
    let slow = "module.exports = () => new Promise((ok) => setTimeout(ok, 50));";
    let calls: Vec<_> = (0..24)
        .map(|_| {
            let r = r.clone();
            tokio::spawn(async move { run(&r, slow).await })
        })
        .collect();
    let mut busy = 0;
    for c in calls {
        match c.await.unwrap() {
            Err(CodeError::Busy) => busy += 1,
            Ok(_) => {}
            other => panic!("{other:?}"),
        }
    }
    assert!(
        busy >= 1,
        "one worker and 16 places: some of 24 calls are refused"
    );
    assert_eq!(
        run(&r, "module.exports = () => 1;").await.unwrap(),
        json!(1)
    );
}
