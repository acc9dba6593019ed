//! What the engine's tests and the modules' tests share: an engine whose host answers `fetch`
//! by echoing the request, one with operator packages, and a call of code.

pub(crate) use std::rc::Rc;
pub(crate) use std::time::Duration;

pub(crate) use serde_json::Value as Json;

pub(crate) use crate::packages::ModuleStore;
pub(crate) use crate::worker::engine::{Call, Engine, Host, Limits};

pub(crate) fn engine() -> Engine {
    let limits = Limits {
        timeout: Duration::from_secs(2),
        memory: 16 << 20,
        max_output: 1 << 20,
    };
    Engine::new(
        limits,
        Rc::new(NoHost),
        Rc::new(ModuleStore::new(Vec::new())),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

pub(crate) struct NoHost;

impl Host for NoHost {
    fn svc(&self, _: String, _: Vec<Json>, _: Option<String>) -> Json {
        serde_json::json!({"error": {"status": 500}})
    }
    fn fetch(&self, request: Json) -> Json {
        // Echoes the request back as the answer's body, as JSON.
        use base64::Engine as _;
        let body = base64::engine::general_purpose::STANDARD.encode(request.to_string());
        serde_json::json!({"ok": {"status": 201, "headers": [["x-echo", "1"]], "body": body}})
    }
    fn log(&self, _: &str, _: &str) {}
}

pub(crate) const EMPTY: Json = Json::Null;

pub(crate) fn call(code: &str) -> Call<'_> {
    Call {
        tenant: uuid::Uuid::nil(),
        code,
        request: &EMPTY,
        svc: false,
        check: false,
    }
}

pub(crate) fn engine_with_modules(files: &[(&str, &str)]) -> Engine {
    let limits = Limits {
        timeout: Duration::from_secs(2),
        memory: 16 << 20,
        max_output: 1 << 20,
    };
    let sources = files
        .iter()
        .map(|(path, text)| ((*path).to_string(), (*text).to_string()))
        .collect();
    let compiled = crate::packages::CodeModules::compile(sources).unwrap_or_else(|e| panic!("{e}"));
    let store = crate::packages::ModuleStore::new(compiled.files().to_vec());
    Engine::new(limits, Rc::new(NoHost), Rc::new(store)).unwrap_or_else(|e| panic!("{e}"))
}
