//! Test harness for the black-box HTTP tests: starts the real server (the same `run` that `main`
//! uses) on port 0 of loopback, on a fresh SQLite or PostgreSQL database, with typed helpers.

pub mod destination;
pub mod npm;
pub mod openbao;

use std::net::TcpListener;
use std::path::PathBuf;

use reqwest::{Method, RequestBuilder, Response};
use serde_json::Value;
use tokenvault_persistence::testing::{Backend, TestDatabase, backends};
use tokenvault_server::Config;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use uuid::Uuid;

pub use tokenvault_persistence::testing::Backend as DbBackend;

/// A running server on its own database.
pub struct TestApp {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The bootstrap management key of tenant "Default".
    pub key: String,
    /// Which database it runs on.
    pub backend: Backend,
    /// The configuration it was started with.
    pub config: Config,
    client: reqwest::Client,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<anyhow::Result<()>>>,
    db: Option<TestDatabase>,
    data_dir: PathBuf,
}

/// A key in the key format that was never issued, or a fixed bootstrap key.
pub fn random_key() -> String {
    format!("key_{}", Uuid::new_v4().simple())
}

/// The code worker the test servers start: this package's `tokenvault-test-worker`, which
/// cargo builds beside the test binaries (`target/<profile>/`, one above `deps/`).
pub fn code_worker() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let dir = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("the target directory");
    dir.join(format!(
        "tokenvault-test-worker{}",
        std::env::consts::EXE_SUFFIX
    ))
}

/// `https` when the server terminates TLS (`tls_cert` set), else `http`.
fn scheme(config: &Config) -> &'static str {
    if config.http.tls.is_some() {
        "https"
    } else {
        "http"
    }
}

/// A client for the server of `config`: trusting its certificate when it speaks TLS.
pub fn client_for(config: &Config) -> reqwest::Client {
    let mut builder = reqwest::Client::builder();
    if let Some(cert) = config.http.tls.as_ref().map(|t| &t.cert) {
        let pem = std::fs::read(cert).expect("the test certificate");
        for cert in reqwest::Certificate::from_pem_bundle(&pem).expect("PEM certificates") {
            builder = builder.add_root_certificate(cert);
        }
    }
    builder.build().expect("an HTTP client")
}

/// A short unique name.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", &Uuid::new_v4().simple().to_string()[..12])
}

impl TestApp {
    /// Starts a server on a fresh database of `backend`.
    pub async fn spawn(backend: Backend) -> Self {
        Self::spawn_with(backend, |_| {}).await
    }

    /// Starts a server, letting `adjust` change the configuration first.
    pub async fn spawn_with(backend: Backend, adjust: impl FnOnce(&mut Config)) -> Self {
        let db = TestDatabase::create(backend).await;
        let data_dir =
            std::env::temp_dir().join(format!("tokenvault-data-{}", Uuid::new_v4().simple()));
        let mut config = Config::for_tests(db.url.clone(), data_dir.clone());
        config.code.worker = Some(code_worker());
        let key = random_key();
        config.keys.bootstrap = Some(key.clone().into());
        adjust(&mut config);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind port 0");
        let base = format!(
            "{}://{}",
            scheme(&config),
            listener.local_addr().expect("addr")
        );
        let (tx, rx) = oneshot::channel::<()>();
        let server = tokio::spawn(tokenvault_server::run(
            config.clone(),
            listener,
            async move {
                let _ = rx.await;
            },
        ));
        let app = Self {
            base,
            key,
            backend,
            client: client_for(&config),
            config,
            shutdown: Some(tx),
            server: Some(server),
            db: Some(db),
            data_dir,
        };
        app.wait_healthy().await;
        app
    }

    async fn wait_healthy(&self) {
        for _ in 0..200 {
            let res = self
                .client
                .get(format!("{}/health", self.base))
                .send()
                .await;
            if res.is_ok_and(|r| r.status().is_success()) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("server did not become healthy");
    }

    /// Signals shutdown and waits for `run` to return; returns what it returned.
    pub async fn shutdown(&mut self) -> anyhow::Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match self.server.take() {
            Some(handle) => handle.await.expect("server task"),
            None => Ok(()),
        }
    }

    /// Closes the harness's own connections to the database (see
    /// [`TestDatabase::close_pool`]): afterwards only the server and the test touch it.
    pub async fn close_harness_pool(&self) {
        self.db.as_ref().expect("database").close_pool().await;
    }

    /// Stops the server and starts it again on the same database and configuration.
    pub async fn restart(&mut self) {
        self.shutdown().await.expect("server stopped cleanly");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind port 0");
        self.base = format!(
            "{}://{}",
            scheme(&self.config),
            listener.local_addr().expect("addr")
        );
        self.client = client_for(&self.config);
        let (tx, rx) = oneshot::channel::<()>();
        self.server = Some(tokio::spawn(tokenvault_server::run(
            self.config.clone(),
            listener,
            async move {
                let _ = rx.await;
            },
        )));
        self.shutdown = Some(tx);
        self.wait_healthy().await;
    }

    /// Every byte the database holds (see [`TestDatabase::dump`]).
    pub async fn dump_database(&self) -> Vec<u8> {
        self.db.as_ref().expect("database").dump().await
    }

    /// Runs one SQL statement on the server's database behind its back; rows changed.
    pub async fn execute_sql(&self, sql: &str) -> u64 {
        self.db.as_ref().expect("database").execute(sql).await
    }

    /// Stops the server and starts it again with a changed configuration.
    pub async fn restart_with(&mut self, adjust: impl FnOnce(&mut Config)) {
        adjust(&mut self.config);
        self.restart().await;
    }

    /// Stops the server and removes its database.
    pub async fn stop(mut self) {
        self.shutdown().await.expect("server stopped cleanly");
        if let Some(db) = self.db.take() {
            db.destroy().await;
        }
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }

    /// A request with `key` (none when `None`).
    pub fn request_as(&self, key: Option<&str>, method: Method, path: &str) -> RequestBuilder {
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        if let Some(key) = key {
            req = req.header("SVC-API-KEY", key);
        }
        req
    }

    /// A request with the bootstrap key.
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.request_as(Some(&self.key), method, path)
    }

    /// GET with the bootstrap key.
    pub async fn get(&self, path: &str) -> Response {
        self.request(Method::GET, path).send().await.expect("GET")
    }

    /// POST JSON with the bootstrap key.
    pub async fn post(&self, path: &str, body: &Value) -> Response {
        self.request(Method::POST, path)
            .json(body)
            .send()
            .await
            .expect("POST")
    }

    /// PUT JSON with the bootstrap key.
    pub async fn put(&self, path: &str, body: &Value) -> Response {
        self.request(Method::PUT, path)
            .json(body)
            .send()
            .await
            .expect("PUT")
    }

    /// DELETE with the bootstrap key.
    pub async fn delete(&self, path: &str) -> Response {
        self.request(Method::DELETE, path)
            .send()
            .await
            .expect("DELETE")
    }

    /// Creates an application with the bootstrap key; returns its JSON (with `key`).
    pub async fn create_app(&self, body: &Value) -> Value {
        let res = self.post("/applications", body).await;
        assert_eq!(res.status(), 201, "create application");
        res.json().await.expect("json")
    }

    /// Creates an application with another tenant's management `key`; returns its JSON.
    pub async fn create_app_as(&self, key: &str, body: &Value) -> Value {
        let res = self
            .request_as(Some(key), Method::POST, "/applications")
            .json(body)
            .send()
            .await
            .expect("POST /applications");
        assert_eq!(res.status(), 201, "create application");
        res.json().await.expect("json")
    }

    /// Creates an application of `ty` with `permissions`.
    pub async fn app(&self, ty: &str, permissions: &[&str]) -> Value {
        self.create_app(&serde_json::json!({
            "name": unique("app"), "type": ty, "permissions": permissions,
        }))
        .await
    }

    /// Creates another tenant as the CLI does; returns its management key.
    pub async fn new_tenant(&self, name: &str) -> (Value, String) {
        let printed = tokenvault_server::tenant_commands::create(&self.config, name, None)
            .await
            .expect("create tenant");
        let key = printed["management_key"].as_str().expect("key").to_string();
        (printed["tenant"].clone(), key)
    }
}

/// A private application holding every token permission with a reveal rule on `/`; returns
/// its key.
pub async fn full_private(app: &TestApp) -> String {
    let created = app
        .create_app(&serde_json::json!({
            "name": unique("full"), "type": "private",
            "permissions": ["token:create", "token:update", "token:read", "token:search", "token:delete", "token:use"],
            "rules": [{"priority": 1, "container": "/", "transform": "reveal",
                       "permissions": ["token:create", "token:update", "token:read", "token:search", "token:delete", "token:use"]}],
        }))
        .await;
    created["key"].as_str().expect("key").to_string()
}

/// Creates a private application with these rules and plain permissions; returns its key.
pub async fn private_with(app: &TestApp, permissions: &[&str], rules: Value) -> String {
    let created = app
        .create_app(&serde_json::json!({
            "name": unique("priv"), "type": "private", "permissions": permissions, "rules": rules,
        }))
        .await;
    created["key"].as_str().expect("key").to_string()
}

/// One access rule.
pub fn rule(priority: u32, container: &str, transform: &str, permissions: &[&str]) -> Value {
    serde_json::json!({"description": "r", "priority": priority, "container": container,
                       "transform": transform, "permissions": permissions})
}

/// Runs `test` against a fresh server, configured by `adjust`, on every backend.
pub async fn on_each_backend_with(adjust: impl Fn(&mut Config), test: impl AsyncFn(&TestApp)) {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, &adjust).await;
        test(&app).await;
        app.stop().await;
    }
}

/// Runs `test` against a fresh server on every backend (SQLite, and PostgreSQL when
/// `TOKENVAULT_TEST_DATABASE_URL` is set).
pub async fn on_each_backend(test: impl AsyncFn(&TestApp)) {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        test(&app).await;
        app.stop().await;
    }
}

/// Asserts a problem+json response of `status`; returns the body.
pub async fn assert_problem(res: Response, status: u16) -> Value {
    assert_eq!(res.status().as_u16(), status, "status");
    let ct = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(
        ct.starts_with("application/problem+json"),
        "content type {ct}"
    );
    let body: Value = res.json().await.expect("problem json");
    assert_eq!(body["status"], status);
    assert_eq!(body["type"], "about:blank");
    assert!(body["title"].as_str().is_some_and(|t| !t.is_empty()));
    body
}

/// Asserts a 400 whose `errors` names every field in `fields`.
pub async fn assert_invalid(res: Response, fields: &[&str]) -> Value {
    let body = assert_problem(res, 400).await;
    for field in fields {
        assert!(
            body["errors"].get(*field).is_some(),
            "errors lacks {field}: {body}"
        );
    }
    body
}
