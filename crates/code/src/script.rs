//! CommonJS files as Node.js compiles them — a sloppy-mode function of `exports`, `require`,
//! `module`, `__filename` and `__dirname` — turned into QuickJS bytecode once and loaded from
//! it into each call's context. rquickjs writes and reads bytecode only for ES modules, which
//! are always strict; npm packages are CommonJS and some need sloppy mode, so this file calls
//! QuickJS's own `JS_Eval` (compile only), `JS_WriteObject`, `JS_ReadObject` and
//! `JS_EvalFunction` for a global script. It is the crate's only direct use of the C API.

use std::ffi::CString;

use rquickjs::{Ctx, Value, qjs};

/// `source` wrapped as Node.js wraps a CommonJS file (a `#!` first line made a comment), as
/// bytecode; `Err` is the compiler's message and line.
pub(crate) fn compile(ctx: &Ctx<'_>, name: &str, source: &str) -> Result<Vec<u8>, String> {
    let body = source
        .strip_prefix("#!")
        .map_or_else(|| source.to_string(), |rest| format!("//{rest}"));
    let wrapped =
        format!("(function (exports, require, module, __filename, __dirname) {{\n{body}\n}})");
    let (Ok(text), Ok(file)) = (CString::new(wrapped), CString::new(name)) else {
        return Err("the file holds a NUL character".into());
    };
    let raw = ctx.as_raw().as_ptr();
    let flags = (qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_COMPILE_ONLY).cast_signed();
    let Ok(length) = qjs::size_t::try_from(text.as_bytes().len()) else {
        return Err("the file is too large".into());
    };
    // SAFETY: `text` is NUL-terminated as JS_Eval requires and outlives the call; the value it
    // returns is freed below on every path; the buffer JS_WriteObject returns is copied, then
    // freed with the context's allocator that made it.
    #[allow(unsafe_code)]
    unsafe {
        let function = qjs::JS_Eval(raw, text.as_ptr(), length, file.as_ptr(), flags);
        if qjs::JS_IsException(function) {
            return Err(message(ctx, name));
        }
        let mut len: qjs::size_t = 0;
        let buf = qjs::JS_WriteObject(
            raw,
            &raw mut len,
            function,
            // Without the source text, which QuickJS otherwise keeps beside every function (for
            // `toString`) and which doubled what travels to each worker.
            (qjs::JS_WRITE_OBJ_BYTECODE | qjs::JS_WRITE_OBJ_STRIP_SOURCE).cast_signed(),
        );
        qjs::JS_FreeValue(raw, function);
        if buf.is_null() {
            return Err(message(ctx, name));
        }
        let bytes = usize::try_from(len)
            .map(|len| std::slice::from_raw_parts(buf, len).to_vec())
            .unwrap_or_default();
        qjs::js_free(raw, buf.cast());
        Ok(bytes)
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
