//! Configuration: the typed sections the server runs on, every value checked. How they are
//! read (defaults → optional TOML file → `TOKENVAULT_*` environment and `DATABASE_URL`, as flat
//! keys) is `config_settings.rs` (`Config::load`). Secrets are `SecretString`s: `Debug` never
//! prints them.

use std::path::PathBuf;

use secrecy::SecretString;

/// Everything the server needs to start, every value checked. `Debug` shows
/// [`Config::summary`]: no secret, and a database URL without its password.
#[derive(Clone)]
pub struct Config {
    /// The HTTP server.
    pub http: Http,
    /// The database.
    pub database: Database,
    /// The keys: bootstrap, master (local or in Transit).
    pub keys: Keys,
    /// The code runtime.
    pub code: Code,
    /// Proxies' and code's outbound requests.
    pub proxy: Proxy,
    /// Logs.
    pub log: Log,
    /// Directory of the default SQLite database and the development master key
    /// (`TOKENVAULT_DATA_DIR`).
    pub data_dir: PathBuf,
    /// Monthly active tokens included in the plan (`TOKENVAULT_INCLUDED_MONTHLY_ACTIVE_TOKENS`).
    pub included_monthly_active_tokens: u64,
    /// Seconds between sweeps for expired applications (`TOKENVAULT_EXPIRY_SWEEP_SECS`).
    pub expiry_sweep_secs: u64,
    /// A tenant's audit entries in memory from which its requests wait for the log to be
    /// written (`TOKENVAULT_AUDIT_HIGH_WATER`, 1–50,000; docs/decisions.md §11).
    pub audit_high_water: usize,
}

/// The HTTP server.
#[derive(Clone)]
pub struct Http {
    /// Address to listen on, `host:port` (`TOKENVAULT_LISTEN`).
    pub listen: String,
    /// HTTPS instead of plain HTTP (`TOKENVAULT_TLS_CERT` with `TOKENVAULT_TLS_KEY`).
    pub tls: Option<Tls>,
    /// Largest request body in bytes (`TOKENVAULT_BODY_LIMIT`).
    pub body_limit: usize,
    /// HTTP worker threads (`TOKENVAULT_WORKERS`); default one per core.
    pub workers: Option<usize>,
    /// Origins browsers may call the API from, each `*` (alone) or `scheme://host[:port]`,
    /// lower case (`TOKENVAULT_CORS_ORIGINS`, comma-separated; none by default).
    pub cors_origins: CorsOrigins,
    /// Requests a second per application, bursts of twice that, per instance; 0 for none
    /// (`TOKENVAULT_RATE_LIMIT_PER_SECOND`).
    pub rate_limit_per_second: u32,
    /// Whether `/console` is served (`TOKENVAULT_CONSOLE`, `on` or `off`; on by default).
    pub console: bool,
}

/// The server's certificate and key (PEM files; HTTP/2 and HTTP/1.1).
#[derive(Clone, Debug)]
pub struct Tls {
    /// Certificate chain (`TOKENVAULT_TLS_CERT`).
    pub cert: PathBuf,
    /// Its private key (`TOKENVAULT_TLS_KEY`).
    pub key: PathBuf,
}

/// The database.
#[derive(Clone)]
pub struct Database {
    /// Its URL (`DATABASE_URL`, or the file `TOKENVAULT_DATABASE_URL_FILE` names, read at
    /// load); `None` for a SQLite file in the data directory.
    pub url: Option<String>,
    /// Pool size (`TOKENVAULT_DB_MAX_CONNECTIONS`).
    pub max_connections: u32,
    /// SQLite's durability (`TOKENVAULT_SQLITE_SYNCHRONOUS`).
    pub synchronous: Synchronous,
}

/// SQLite's `synchronous`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synchronous {
    /// `full` (the default): an acknowledged write survives power loss.
    Full,
    /// `normal`: faster; the last commits may be lost on power loss.
    Normal,
}

/// The keys.
#[derive(Clone)]
pub struct Keys {
    /// Fixed key of the bootstrap application (`TOKENVAULT_BOOTSTRAP_KEY`).
    pub bootstrap: Option<SecretString>,
    /// Base64 master key (`TOKENVAULT_MASTER_KEY`).
    pub master: Option<SecretString>,
    /// File holding the master key (`TOKENVAULT_MASTER_KEY_FILE`).
    pub master_file: Option<PathBuf>,
    /// Comma-separated base64 master keys still accepted for unwrapping, during a rotation
    /// (`TOKENVAULT_PREVIOUS_MASTER_KEYS`).
    pub previous: Option<SecretString>,
    /// A key manager holding the master key; the settings above then only unwrap older keys.
    pub transit: Option<Transit>,
}

/// A HashiCorp Vault / OpenBao server whose Transit engine holds the master key.
#[derive(Clone, Debug)]
pub struct Transit {
    /// `https://vault.internal:8200` (`TOKENVAULT_TRANSIT_ADDRESS`).
    pub address: String,
    /// The engine's mount path (`TOKENVAULT_TRANSIT_MOUNT`).
    pub mount: String,
    /// The key's name (`TOKENVAULT_TRANSIT_KEY`).
    pub key: String,
    /// A file holding the token (`TOKENVAULT_TRANSIT_TOKEN_FILE`, needed with the address).
    pub token_file: PathBuf,
}

/// The code runtime.
#[derive(Clone, Debug)]
pub struct Code {
    /// Wall-clock limit of one call in milliseconds (`TOKENVAULT_CODE_TIMEOUT_MS`).
    pub timeout_ms: u64,
    /// Memory limit of one runtime in MiB (`TOKENVAULT_CODE_MEMORY_MB`).
    pub memory_mb: usize,
    /// Worker processes, each with a warm runtime (`TOKENVAULT_CODE_WORKERS`).
    pub workers: usize,
    /// Workers run under their seccomp filter and the server refuses to start where it cannot
    /// be installed (`TOKENVAULT_CODE_SANDBOX=on`, the default); `off` is the operator's
    /// explicit opt-out, logged at every worker start.
    pub sandbox: bool,
    /// The percentage of the workers, and of their queue, one tenant may hold, 1–100
    /// (`TOKENVAULT_CODE_TENANT_SHARE`).
    pub tenant_share: TenantShare,
    /// The executable of a worker, run with the argument `code-worker`; default this binary
    /// (`TOKENVAULT_CODE_WORKER`; the tests' harness sets it).
    pub worker: Option<PathBuf>,
    /// A folder with a `node_modules/` whose packages code may `require`, compiled once at
    /// start (`TOKENVAULT_CODE_MODULES`).
    pub modules: Option<PathBuf>,
}

/// Outbound requests: proxies' and code's `fetch`.
#[derive(Clone, Debug)]
pub struct Proxy {
    /// `http://` destinations allowed (`TOKENVAULT_PROXY_ALLOW_HTTP`; development and tests).
    pub allow_http: bool,
    /// Hosts (names or literal addresses) and CIDRs that may be reached although not public
    /// (`TOKENVAULT_PROXY_ALLOWED_HOSTS`, comma-separated).
    pub allowed_hosts: Vec<String>,
    /// How long a destination may take, in milliseconds (`TOKENVAULT_PROXY_TIMEOUT_MS`).
    pub timeout_ms: u64,
}

/// Logs.
#[derive(Clone, Debug)]
pub struct Log {
    /// Filter when `RUST_LOG` is unset (`TOKENVAULT_LOG`).
    pub filter: String,
    /// One JSON object per line instead of text (`TOKENVAULT_LOG_FORMAT=json`).
    pub json: bool,
}

/// Origins browsers may call the API from, each `*` (alone) or `scheme://host[:port]`, lower
/// case. Made only by [`CorsOrigins::parse`], so a configuration built in code is checked as
/// one read from a file is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CorsOrigins(Vec<String>);

impl CorsOrigins {
    /// A comma-separated list (`TOKENVAULT_CORS_ORIGINS`); empty for none.
    ///
    /// # Errors
    /// An entry that is not `*` nor an origin, or `*` beside origins (naming the key).
    pub fn parse(value: &str) -> anyhow::Result<Self> {
        let origins: Vec<String> = value
                .split(',')
                .map(str::trim)
                .filter(|o| !o.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
            .into_iter()
            .map(|origin| {
                let rest = origin
                    .strip_prefix("https://")
                    .or_else(|| origin.strip_prefix("http://"));
                match rest {
                    _ if origin == "*" => Ok(origin.clone()),
                    Some(host)
                        if !host.is_empty()
                            && host.bytes().all(|b| {
                                b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']')
                            }) =>
                    {
                        Ok(origin.to_ascii_lowercase())
                    }
                    _ => anyhow::bail!(
                        "TOKENVAULT_CORS_ORIGINS: {origin:?} is not `*` nor an origin like https://shop.example"
                    ),
                }
            })
            .collect::<anyhow::Result<_>>()?;
        if origins.len() > 1 && origins.iter().any(|o| o == "*") {
            anyhow::bail!("TOKENVAULT_CORS_ORIGINS: `*` stands alone, not beside origins");
        }
        Ok(Self(origins))
    }

    /// The origins.
    pub fn as_slice(&self) -> &[String] {
        &self.0
    }
}

/// The percentage of the code workers, and of their queue, one tenant may hold: 1–100. Made
/// only by [`TenantShare::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TenantShare(u8);

impl TenantShare {
    /// `percent` of the workers.
    ///
    /// # Errors
    /// Outside 1–100 (naming the key).
    pub fn new(percent: u8) -> anyhow::Result<Self> {
        if !(1..=100).contains(&percent) {
            anyhow::bail!("TOKENVAULT_CODE_TENANT_SHARE must be 1 to 100, not {percent}");
        }
        Ok(Self(percent))
    }

    /// The percentage.
    pub fn percent(self) -> u8 {
        self.0
    }

    /// As a fraction of one.
    pub fn fraction(self) -> f64 {
        f64::from(self.0) / 100.0
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Config {}", self.summary())
    }
}

impl Config {
    /// What only the file system can tell, as the server checks it at start: the TLS files
    /// read and their key fitting the certificate, the code modules' folder present.
    pub fn check_files(&self) -> anyhow::Result<()> {
        self.tls()?;
        if let Some(folder) = &self.code.modules
            && !folder.join("node_modules").is_dir()
        {
            anyhow::bail!(
                "TOKENVAULT_CODE_MODULES: {} has no node_modules folder",
                folder.display()
            );
        }
        Ok(())
    }

    /// The server's TLS (its files read and checked now); `None` for plain HTTP.
    pub fn tls(&self) -> anyhow::Result<Option<rustls::ServerConfig>> {
        self.http
            .tls
            .as_ref()
            .map(|tls| {
                tokenvault_http::tls::server_config(&tls.cert, &tls.key).map_err(anyhow::Error::msg)
            })
            .transpose()
    }

    /// One tenant's share of the code workers, as a fraction.
    pub fn code_tenant_share(&self) -> f64 {
        self.code.tenant_share.fraction()
    }

    /// Whether the master key lives nowhere but the data directory (development mode).
    pub fn development_master_key(&self) -> bool {
        self.keys.master.is_none() && self.keys.master_file.is_none() && self.keys.transit.is_none()
    }

    /// What is in effect, for `tokenvault config check`: every value but the secrets, whose
    /// presence only is told; a database URL without its password.
    pub fn summary(&self) -> serde_json::Value {
        let database = crate::database_url::without_secrets(&self.effective_database_url());
        let master_key = if self.keys.transit.is_some() {
            "Transit (TOKENVAULT_TRANSIT_ADDRESS)"
        } else if self.keys.master.is_some() {
            "TOKENVAULT_MASTER_KEY"
        } else if self.keys.master_file.is_some() {
            "TOKENVAULT_MASTER_KEY_FILE"
        } else {
            "development mode: <data dir>/master.key"
        };
        let transit = self.keys.transit.as_ref();
        serde_json::json!({
            "listen": self.http.listen,
            "tls": self.http.tls.is_some(),
            "tls_cert": self.http.tls.as_ref().map(|t| &t.cert),
            "tls_key": self.http.tls.as_ref().map(|t| &t.key),
            "database": database,
            "data_dir": self.data_dir,
            "master_key": master_key,
            "master_key_file": self.keys.master_file,
            "previous_master_keys": self.keys.previous.is_some(),
            "transit_address": transit.map(|t| &t.address),
            "transit_mount": transit.map(|t| &t.mount),
            "transit_key": transit.map(|t| &t.key),
            "transit_token_file": transit.map(|t| &t.token_file),
            "bootstrap_key": self.keys.bootstrap.is_some(),
            "included_monthly_active_tokens": self.included_monthly_active_tokens,
            "body_limit": self.http.body_limit,
            "expiry_sweep_secs": self.expiry_sweep_secs,
            "db_max_connections": self.database.max_connections,
            "workers": self.http.workers,
            "log": self.log.filter,
            "log_format": if self.log.json { "json" } else { "text" },
            "sqlite_synchronous": match self.database.synchronous {
                Synchronous::Full => "full",
                Synchronous::Normal => "normal",
            },
            "code_timeout_ms": self.code.timeout_ms,
            "code_memory_mb": self.code.memory_mb,
            "code_workers": self.code.workers,
            "code_sandbox": if self.code.sandbox { "on" } else { "off" },
            "code_tenant_share": self.code.tenant_share.percent(),
            "code_worker": self.code.worker,
            "code_modules": self.code.modules,
            "proxy_allow_http": self.proxy.allow_http,
            "proxy_allowed_hosts": self.proxy.allowed_hosts.join(","),
            "proxy_timeout_ms": self.proxy.timeout_ms,
            "rate_limit_per_second": self.http.rate_limit_per_second,
            "audit_high_water": self.audit_high_water,
            "cors_origins": self.http.cors_origins.as_slice().join(","),
            "console": if self.http.console { "on" } else { "off" },
        })
    }

    /// Whether SQLite runs with `synchronous=NORMAL`.
    pub fn sqlite_synchronous_normal(&self) -> bool {
        self.database.synchronous == Synchronous::Normal
    }

    /// How to open the configured database: `max_connections`, the configured SQLite
    /// durability, and keys kept in memory only for a server (`serving`), never for one CLI
    /// command.
    pub fn db_options(
        &self,
        max_connections: u32,
        serving: bool,
    ) -> tokenvault_persistence::DbOptions {
        tokenvault_persistence::DbOptions {
            max_connections,
            sqlite_synchronous_normal: self.sqlite_synchronous_normal(),
            keys_in_memory: serving,
        }
    }

    /// Whether no database URL is set: the SQLite default under `data_dir`.
    pub fn default_database(&self) -> bool {
        self.database.url.as_deref().is_none_or(str::is_empty)
    }

    /// The database URL in effect (the SQLite default under `data_dir` when none is set).
    pub fn effective_database_url(&self) -> String {
        match &self.database.url {
            Some(url) if !url.is_empty() => url.clone(),
            _ => format!(
                "sqlite://{}/tokenvault.db?mode=rwc",
                self.data_dir.display()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    #[test]
    fn debug_never_shows_secrets() {
        let mut config = Config::for_tests("sqlite://x".into(), "d".into());
        config.keys.bootstrap = Some(SecretString::from("key_secretsecretsecretsecretsecret12"));
        config.keys.master = Some(SecretString::from("bWFzdGVy"));
        config.database.url = Some("postgres://vault:hunter2@db.internal:5432/vault".into());
        let shown = format!("{config:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("db.internal"), "{shown}");
        assert!(!shown.contains("secretsecret"));
        assert!(!shown.contains("bWFzdGVy"));
        assert_eq!(config.keys.master.unwrap().expose_secret(), "bWFzdGVy");
    }

    #[test]
    fn default_database_is_sqlite_in_data_dir() {
        let mut config = Config::for_tests(String::new(), "/tmp/tv".into());
        config.database.url = None;
        assert!(config.default_database());
        assert_eq!(
            config.effective_database_url(),
            "sqlite:///tmp/tv/tokenvault.db?mode=rwc"
        );
    }
}
