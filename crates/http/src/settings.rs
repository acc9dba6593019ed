//! What the server is built with: its settings and the body limit routes read.

/// The largest request body in bytes, for routes that read their body themselves.
#[derive(Clone, Copy, Debug)]
pub struct BodyLimit(pub usize);

/// Settings of the HTTP server.
#[derive(Clone, Debug)]
pub struct HttpSettings {
    /// Largest request body in bytes (413 beyond).
    pub body_limit: usize,
    /// Worker threads (`None`: one per core).
    pub workers: Option<usize>,
    /// Seconds in-flight requests get to finish on shutdown.
    pub shutdown_timeout_secs: u64,
    /// Monthly active tokens included in the plan (usage report).
    pub included_monthly_active_tokens: u64,
    /// Origins browsers may call `POST /tokens`, `POST /tokenize` and `POST /sessions` from
    /// (`https://shop.example`), or `*` for any (the caller's origin is echoed); empty: no
    /// CORS headers. No other route answers CORS (`BrowserCors`, `cors.rs`).
    pub cors_origins: Vec<String>,
    /// Requests a second per application, bursts of twice that (off by default); shared with
    /// `req.svc` (`svc::HttpSvcWire`), whose calls count too.
    pub rate_limit: std::sync::Arc<crate::limit::RateLimit>,
    /// What `GET /metrics` shows (shared with the code-runner decorator of the server).
    pub metrics: std::sync::Arc<crate::metrics::Metrics>,
    /// The changes running as their own task (`complete.rs`), bounded; the server's shutdown
    /// waits for them (`complete::Detached::drain`).
    pub detached: std::sync::Arc<crate::complete::Detached>,
    /// What `GET /ready` checks (the server wires in the database and the code workers).
    pub ready: crate::ready::ReadyChecks,
    /// TLS, when the server terminates it itself (`tls::server_config`); plain HTTP else.
    pub tls: Option<rustls::ServerConfig>,
    /// Whether `/console` is served (`console.rs`); off, it is a 404 like any unknown path.
    pub console: bool,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            body_limit: 1024 * 1024,
            workers: None,
            shutdown_timeout_secs: 30,
            included_monthly_active_tokens: 1000,
            cors_origins: Vec::new(),
            rate_limit: std::sync::Arc::new(crate::limit::RateLimit::new(0)),
            metrics: std::sync::Arc::default(),
            detached: std::sync::Arc::default(),
            ready: crate::ready::ReadyChecks::default(),
            tls: None,
            console: true,
        }
    }
}
