//! CommonJS files as Node.js compiles them — a sloppy-mode function of `exports`, `require`,
//! `module`, `__filename` and `__dirname` — turned into QuickJS bytecode once and loaded from
//! it into each call's context: the operator's packages (`../packages.rs`) and the tenant's own
//! module (`code_cache.rs`). rquickjs writes and reads bytecode only for ES modules, which
//! are always strict; npm packages are CommonJS and some need sloppy mode, so this file calls
//! QuickJS's own `JS_Eval` (compile only), `JS_WriteObject`, `JS_ReadObject` and
//! `JS_EvalFunction` for a global script. It is the crate's only direct use of the C API.

use std::ffi::CStr;

use rquickjs::{Ctx, Value, qjs};

/// `source` wrapped as Node.js wraps a CommonJS file (a `#!` first line made a comment), as
/// bytecode; `Err` is the compiler's message and line.
pub(crate) fn compile(ctx: &Ctx<'_>, name: &str, source: &str) -> Result<Vec<u8>, String> {
    let body = source
        .strip_prefix("#!")
        .map_or_else(|| source.to_string(), |rest| format!("//{rest}"));
    let wrapped =
        format!("(function (exports, require, module, __filename, __dirname) {{\n{body}\n}})");
    let Ok(file) = std::ffi::CString::new(name) else {
        return Err("the file's name holds a NUL character".into());
    };
    if wrapped.contains('\0') {
        return Err("the file holds a NUL character".into());
    }
    // Without the source text, which QuickJS otherwise keeps beside every function (for
    // `toString`) and which doubled what travels to each worker.
    let flags = qjs::JS_WRITE_OBJ_BYTECODE | qjs::JS_WRITE_OBJ_STRIP_SOURCE;
    compile_script(ctx, wrapped, &file, flags).map_err(|()| message(ctx, name))
}

/// The tenant's module as `new Function('exports', 'require', 'module', '__filename',
/// '__dirname', source)` compiles it — the same text, file name and lines, its source kept for
/// `toString` — as bytecode; `Err` is the message `new Function` would have thrown, as
/// `<name>: <message> (line <n>)` with the line counted from the module's first.
pub(crate) fn compile_module(ctx: &Ctx<'_>, source: &str) -> Result<Vec<u8>, String> {
    // What QuickJS's `Function` constructor evaluates (`MODULE_WRAPPER_LINES` before the
    // source).
    let wrapped = format!(
        "(function anonymous(exports,require,module,__filename,__dirname\n) {{\n{source}\n}})"
    );
    compile_script(ctx, wrapped, c"<input>", qjs::JS_WRITE_OBJ_BYTECODE)
        .map_err(|()| module_message(ctx))
}

/// The lines `compile_module`'s wrapper puts before the tenant's source.
const MODULE_WRAPPER_LINES: u64 = 2;

/// The line of the tenant's module (counted from its first) that an error's `stack` names
/// first: where it was made, or the module's call into whatever made it (a package, the
/// prelude); `None` when no frame is in the module.
pub(crate) fn module_line(stack: &str) -> Option<u64> {
    stack
        .split("(<input>:")
        .skip(1)
        .find_map(|frame| {
            let (line, column) = frame.split_once(':')?;
            let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
            let column = column.split(')').next()?;
            (digits(line) && digits(column)).then(|| line.parse::<u64>().ok())?
        })
        .map(|line| line.saturating_sub(MODULE_WRAPPER_LINES).max(1))
}

/// `text` compiled as a global script and written as bytecode with `flags`; `Err` leaves the
/// compiler's exception pending.
fn compile_script(ctx: &Ctx<'_>, text: String, file: &CStr, flags: u32) -> Result<Vec<u8>, ()> {
    let raw = ctx.as_raw().as_ptr();
    let eval = (qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_COMPILE_ONLY).cast_signed();
    let Ok(length) = qjs::size_t::try_from(text.len()) else {
        return Err(());
    };
    // JS_Eval reads up to `length` bytes (a NUL among them is the source's own) and wants one
    // more, a NUL, after them.
    let mut text = text.into_bytes();
    text.push(0);
    // SAFETY: `text` holds `length` bytes and a NUL after them, as JS_Eval requires, and
    // outlives the call; the value it returns is freed below on every path; the buffer
    // JS_WriteObject returns is copied, then freed with the context's allocator that made it.
    #[allow(unsafe_code)]
    unsafe {
        let function = qjs::JS_Eval(raw, text.as_ptr().cast(), length, file.as_ptr(), eval);
        if qjs::JS_IsException(function) {
            return Err(());
        }
        let mut len: qjs::size_t = 0;
        let buf = qjs::JS_WriteObject(raw, &raw mut len, function, flags.cast_signed());
        qjs::JS_FreeValue(raw, function);
        if buf.is_null() {
            return Err(());
        }
        // QuickJS's writer goes on past a buffer it could not grow (leaving a gap in what it
        // wrote) and only leaves an exception pending: such bytes are never kept nor loaded.
        let bytes = match usize::try_from(len) {
            Ok(len) if !qjs::JS_HasException(raw) => {
                Ok(std::slice::from_raw_parts(buf, len).to_vec())
            }
            _ => Err(()),
        };
        qjs::js_free(raw, buf.cast());
        bytes
    }
}

/// The function `bytes` (made by [`compile`]) holds, in this context.
pub(crate) fn load<'js>(ctx: &Ctx<'js>, bytes: &[u8]) -> rquickjs::Result<Value<'js>> {
    let raw = ctx.as_raw().as_ptr();
    let Ok(length) = qjs::size_t::try_from(bytes.len()) else {
        return Err(rquickjs::Error::Unknown);
    };
    // SAFETY: the bytes are what `compile` of this same QuickJS build produced (in this
    // process, or in the server that runs this same binary), never read from elsewhere. Both
    // values are owned: JS_EvalFunction frees the one it is given, and the result is handed to
    // a `Value` that frees it.
    #[allow(unsafe_code)]
    unsafe {
        let function = qjs::JS_ReadObject(
            raw,
            bytes.as_ptr(),
            length,
            qjs::JS_READ_OBJ_BYTECODE.cast_signed(),
        );
        if qjs::JS_IsException(function) {
            return Err(rquickjs::Error::Exception);
        }
        let value = qjs::JS_EvalFunction(raw, function);
        if qjs::JS_IsException(value) {
            return Err(rquickjs::Error::Exception);
        }
        Ok(Value::from_raw(ctx.clone(), value))
    }
}

/// The pending exception's message, and its line counted from the file's first line.
fn message(ctx: &Ctx<'_>, name: &str) -> String {
    let error = ctx.catch();
    let Some(object) = error.as_object() else {
        return format!("{name}: the file does not compile");
    };
    let kind: String = object.get("name").unwrap_or_else(|_| "SyntaxError".into());
    let text: String = object.get("message").unwrap_or_default();
    let stack: String = object.get("stack").unwrap_or_default();
    // The wrapper puts one line before the file.
    let line = stack
        .split(&format!("{name}:"))
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse::<u64>().ok())
        .map(|n| n.saturating_sub(1).max(1));
    // Requiring the file throws a SyntaxError carrying this message.
    let text = if kind == "SyntaxError" {
        text
    } else {
        format!("{kind}: {text}")
    };
    match line {
        Some(line) => format!("{text} ({name}, line {line})"),
        None => format!("{text} ({name})"),
    }
}

/// The pending exception as `new Function` reports it (`compile_module`).
fn module_message(ctx: &Ctx<'_>) -> String {
    let error = ctx.catch();
    let (kind, text, stack) = match error.as_object() {
        Some(object) => (
            object
                .get::<_, String>("name")
                .ok()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "SyntaxError".into()),
            object.get::<_, String>("message").unwrap_or_default(),
            object.get::<_, String>("stack").unwrap_or_default(),
        ),
        None => ("SyntaxError".into(), String::new(), String::new()),
    };
    let text = if text.is_empty() {
        "the code does not compile".to_string()
    } else {
        text
    };
    // The first `:<line>:<column>` of the stack, less the wrapper's lines.
    match first_line_number(&stack) {
        Some(line) => format!(
            "{kind}: {text} (line {})",
            line.saturating_sub(MODULE_WRAPPER_LINES).max(1)
        ),
        None => format!("{kind}: {text}"),
    }
}

/// The `<line>` of the first `:<line>:<column>` in `stack`.
fn first_line_number(stack: &str) -> Option<u64> {
    let bytes = stack.as_bytes();
    let digits = |from: usize| {
        bytes[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    for (at, _) in stack.match_indices(':') {
        let line = digits(at + 1);
        if line > 0 && bytes.get(at + 1 + line) == Some(&b':') && digits(at + 2 + line) > 0 {
            return stack[at + 1..at + 1 + line].parse().ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::module_line;

    #[test]
    fn the_module_line_is_its_first_frame_in_the_module() {
        let stack = "    at BadRequestError (prelude.js:12:5)\n    at check (<input>:4:11)\n    \
                     at <anonymous> (<input>:9:3)\n";
        assert_eq!(module_line(stack), Some(2));
        // A frame without a line is passed over; a stack that never enters the module has none.
        assert_eq!(
            module_line("    at f (<input>)\n    at g (<input>:1:1)"),
            Some(1)
        );
        assert_eq!(module_line("    at parse (native)\n"), None);
        assert_eq!(module_line("    at x (<input>:a:1)"), None);
    }
}
