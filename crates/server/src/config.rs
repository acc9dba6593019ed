//! Configuration, layered: defaults → optional TOML file → `TOKENVAULT_*` environment (and
//! `DATABASE_URL`). Secrets are `SecretString`s: `Debug` never prints them.

use std::path::{Path, PathBuf};

use figment::providers::{Env, Format, Serialized, Toml};
use figment::{Figment, Provider};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

/// Everything the server needs to start. `Debug` shows [`Config::summary`]: no secret, and a
/// database URL without its password.
#[derive(Clone, Deserialize)]
pub struct Config {
    /// Address to listen on (`TOKENVAULT_LISTEN`).
    pub listen: String,
    /// Database URL (`DATABASE_URL`); default a SQLite file in `data_dir`.
    pub database_url: Option<String>,
    /// File holding the database URL, for secrets mounted as files
    /// (`TOKENVAULT_DATABASE_URL_FILE`); read at load when `DATABASE_URL` is unset.
    pub database_url_file: Option<PathBuf>,
    /// PEM certificate chain: with `tls_key`, the server speaks HTTPS (HTTP/2 and HTTP/1.1)
    /// instead of plain HTTP (`TOKENVAULT_TLS_CERT`).
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of `tls_cert` (`TOKENVAULT_TLS_KEY`).
    pub tls_key: Option<PathBuf>,
    /// Directory of the default SQLite database (`TOKENVAULT_DATA_DIR`).
    pub data_dir: PathBuf,
    /// Fixed key of the bootstrap application (`TOKENVAULT_BOOTSTRAP_KEY`).
    pub bootstrap_key: Option<SecretString>,
    /// Base64 master key (`TOKENVAULT_MASTER_KEY`); used by token encryption.
    pub master_key: Option<SecretString>,
    /// File holding the master key (`TOKENVAULT_MASTER_KEY_FILE`).
    pub master_key_file: Option<PathBuf>,
    /// Comma-separated base64 master keys still accepted for unwrapping, during a rotation
    /// (`TOKENVAULT_PREVIOUS_MASTER_KEYS`).
    pub previous_master_keys: Option<SecretString>,
    /// A HashiCorp Vault / OpenBao server whose Transit engine holds the master key
    /// (`TOKENVAULT_TRANSIT_ADDRESS`, `https://vault.internal:8200`): tenant keys are wrapped
    /// and unwrapped there, and the master key settings above only unwrap older keys.
    pub transit_address: Option<String>,
    /// The Transit engine's mount path (`TOKENVAULT_TRANSIT_MOUNT`).
    pub transit_mount: String,
    /// The Transit key's name (`TOKENVAULT_TRANSIT_KEY`).
    pub transit_key: String,
    /// A file holding the token for Transit (`TOKENVAULT_TRANSIT_TOKEN_FILE`).
    pub transit_token_file: Option<PathBuf>,
    /// Monthly active tokens included in the plan (`TOKENVAULT_INCLUDED_MONTHLY_ACTIVE_TOKENS`).
    pub included_monthly_active_tokens: u64,
    /// Largest request body in bytes (`TOKENVAULT_BODY_LIMIT`).
    pub body_limit: usize,
    /// Seconds between sweeps for expired applications (`TOKENVAULT_EXPIRY_SWEEP_SECS`).
    pub expiry_sweep_secs: u64,
    /// Database pool size (`TOKENVAULT_DB_MAX_CONNECTIONS`).
    pub db_max_connections: u32,
    /// HTTP worker threads (`TOKENVAULT_WORKERS`); default one per core.
    pub workers: Option<usize>,
    /// Log filter when `RUST_LOG` is unset (`TOKENVAULT_LOG`).
    pub log: String,
    /// `text` (the default) or `json`: one JSON object per line (`TOKENVAULT_LOG_FORMAT`).
    pub log_format: String,
    /// SQLite durability (`TOKENVAULT_SQLITE_SYNCHRONOUS`): `full` (default: an acknowledged
    /// write survives power loss) or `normal` (faster; the last commits may be lost then).
    pub sqlite_synchronous: String,
    /// Wall-clock limit of one code call in milliseconds (`TOKENVAULT_CODE_TIMEOUT_MS`).
    pub code_timeout_ms: u64,
    /// Memory limit of one code runtime in MiB (`TOKENVAULT_CODE_MEMORY_MB`).
    pub code_memory_mb: usize,
    /// Code worker processes, each with a warm runtime (`TOKENVAULT_CODE_WORKERS`).
    pub code_workers: usize,
    /// `on` (the default): code workers run under their seccomp filter, and the server refuses
    /// to start where it cannot be installed; `off`: the operator's explicit opt-out, logged at
    /// every worker start (`TOKENVAULT_CODE_SANDBOX`).
    pub code_sandbox: String,
    /// The percentage of the code workers, and of their queue, one tenant may hold, 1–100
    /// (`TOKENVAULT_CODE_TENANT_SHARE`, default 75).
    pub code_tenant_share: u8,
    /// The executable of a code worker, run with the argument `code-worker`; default this
    /// binary (`TOKENVAULT_CODE_WORKER`; the tests' harness sets it).
    pub code_worker: Option<PathBuf>,
    /// A folder with a `node_modules/` (made by `npm install --prefix <folder> …`) whose
    /// packages code may `require`; read and compiled once at start
    /// (`TOKENVAULT_CODE_MODULES`; none by default).
    pub code_modules: Option<PathBuf>,
    /// Proxies may forward to `http://` destinations (`TOKENVAULT_PROXY_ALLOW_HTTP`; for
    /// development and tests).
    pub proxy_allow_http: bool,
    /// Hosts (names or literal addresses) and CIDRs proxies may reach although they are not
    /// public, comma-separated (`TOKENVAULT_PROXY_ALLOWED_HOSTS`).
    pub proxy_allowed_hosts: String,
    /// How long a proxy waits for its destination, in milliseconds
    /// (`TOKENVAULT_PROXY_TIMEOUT_MS`).
    pub proxy_timeout_ms: u64,
    /// Requests a second per application, bursts of twice that, per instance; 0 (the
    /// default) for none (`TOKENVAULT_RATE_LIMIT_PER_SECOND`).
    pub rate_limit_per_second: u32,
    /// A tenant's audit entries in memory from which its requests wait for the log to be
    /// written (`TOKENVAULT_AUDIT_HIGH_WATER`; docs/decisions.md §11).
    pub audit_high_water: usize,
    /// Origins browsers may call the API from, comma-separated (`https://shop.example`), or
    /// `*`; empty (the default) for no CORS (`TOKENVAULT_CORS_ORIGINS`).
    pub cors_origins: String,
}

#[derive(Serialize)]
struct Defaults {
    listen: &'static str,
    transit_mount: &'static str,
    transit_key: &'static str,
    data_dir: &'static str,
    body_limit: usize,
    expiry_sweep_secs: u64,
    db_max_connections: u32,
    log: &'static str,
    log_format: &'static str,
    included_monthly_active_tokens: u64,
    sqlite_synchronous: &'static str,
    code_timeout_ms: u64,
    code_memory_mb: usize,
    code_workers: usize,
    code_sandbox: &'static str,
    code_tenant_share: u8,
    proxy_allow_http: bool,
    proxy_allowed_hosts: &'static str,
    proxy_timeout_ms: u64,
    rate_limit_per_second: u32,
    audit_high_water: usize,
    cors_origins: &'static str,
}

const DEFAULTS: Defaults = Defaults {
    listen: "127.0.0.1:8080",
    transit_mount: "transit",
    transit_key: "tokenvault",
    data_dir: "./data",
    body_limit: 1024 * 1024,
    expiry_sweep_secs: 30,
    db_max_connections: 8,
    log: "info",
    log_format: "text",
    included_monthly_active_tokens: 1000,
    sqlite_synchronous: "full",
    code_timeout_ms: 10_000,
    code_memory_mb: 64,
    code_workers: 4,
    code_sandbox: "on",
    code_tenant_share: 75,
    proxy_allow_http: false,
    proxy_allowed_hosts: "",
    proxy_timeout_ms: 25_000,
    rate_limit_per_second: 0,
    audit_high_water: tokenvault_domain::service::AUDIT_HIGH_WATER,
    cors_origins: "",
};

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Config {}", self.summary())
    }
}

impl Config {
    /// Loads the layers. `file` is required when given explicitly; otherwise
    /// `TOKENVAULT_CONFIG` (or `tokenvault.toml` if present) is read.
    /// A key of the file that is not a configuration key is an error naming it.
    pub fn load(file: Option<&Path>) -> Result<Self, Box<figment::Error>> {
        let mut figment = Figment::from(Serialized::defaults(DEFAULTS));
        let toml = match file {
            Some(path) => Toml::file_exact(path),
            None => match std::env::var_os("TOKENVAULT_CONFIG") {
                Some(path) => Toml::file_exact(PathBuf::from(path)),
                None => Toml::file("tokenvault.toml"),
            },
        };
        let keys = toml.data().map_err(Box::new)?;
        let known = crate::config_keys::field_names::<Self>();
        for dict in keys.values() {
            let name = file.map_or_else(
                || "the configuration file".into(),
                |p| p.display().to_string(),
            );
            crate::config_keys::check(&name, dict.keys().map(String::as_str), &known)
                .map_err(|e| Box::new(figment::Error::from(e)))?;
        }
        figment = figment.merge(toml);
        let mut config: Self = figment
            .merge(Env::prefixed("TOKENVAULT_").ignore(&["CONFIG"]))
            .merge(Env::raw().only(&["DATABASE_URL"]))
            .extract()
            .map_err(Box::new)?;
        if let Some(path) = &config.database_url_file
            && config.database_url.as_deref().is_none_or(str::is_empty)
        {
            let url = std::fs::read_to_string(path).map_err(|e| {
                Box::new(figment::Error::from(format!(
                    "TOKENVAULT_DATABASE_URL_FILE: cannot read {}: {e}",
                    path.display()
                )))
            })?;
            config.database_url = Some(url.trim().to_string());
        }
        Ok(config)
    }

    /// Defaults only, for tests: listen on port 0 of loopback, data in `data_dir`.
    pub fn for_tests(database_url: String, data_dir: PathBuf) -> Self {
        Self {
            listen: "127.0.0.1:0".into(),
            database_url: Some(database_url),
            database_url_file: None,
            tls_cert: None,
            tls_key: None,
            data_dir,
            bootstrap_key: None,
            master_key: None,
            master_key_file: None,
            previous_master_keys: None,
            transit_address: None,
            transit_mount: DEFAULTS.transit_mount.into(),
            transit_key: DEFAULTS.transit_key.into(),
            transit_token_file: None,
            included_monthly_active_tokens: DEFAULTS.included_monthly_active_tokens,
            body_limit: DEFAULTS.body_limit,
            expiry_sweep_secs: 1,
            db_max_connections: 4,
            workers: Some(1),
            log: DEFAULTS.log.into(),
            log_format: DEFAULTS.log_format.into(),
            sqlite_synchronous: DEFAULTS.sqlite_synchronous.into(),
            code_timeout_ms: DEFAULTS.code_timeout_ms,
            code_memory_mb: DEFAULTS.code_memory_mb,
            code_workers: 2,
            code_sandbox: DEFAULTS.code_sandbox.into(),
            code_tenant_share: DEFAULTS.code_tenant_share,
            code_worker: None,
            code_modules: None,
            proxy_allow_http: false,
            proxy_allowed_hosts: String::new(),
            proxy_timeout_ms: DEFAULTS.proxy_timeout_ms,
            rate_limit_per_second: 0,
            audit_high_water: DEFAULTS.audit_high_water,
            cors_origins: String::new(),
        }
    }

    /// The entries of `TOKENVAULT_CORS_ORIGINS`, each `*` or `scheme://host[:port]`.
    pub fn cors_origins(&self) -> anyhow::Result<Vec<String>> {
        let origins: Vec<String> = self
            .cors_origins
            .split(',')
            .map(str::trim)
            .filter(|o| !o.is_empty())
            .map(|origin| {
                let rest = origin
                    .strip_prefix("https://")
                    .or_else(|| origin.strip_prefix("http://"));
                match rest {
                    _ if origin == "*" => Ok(origin.to_string()),
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
        Ok(origins)
    }

    /// The entries of `TOKENVAULT_PROXY_ALLOWED_HOSTS`.
    pub fn proxy_allowed_hosts(&self) -> Vec<String> {
        self.proxy_allowed_hosts
            .split(',')
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// Whether code workers must run under their seccomp filter (`TOKENVAULT_CODE_SANDBOX`).
    pub fn code_sandbox_required(&self) -> anyhow::Result<bool> {
        match self.code_sandbox.to_ascii_lowercase().as_str() {
            "on" => Ok(true),
            "off" => Ok(false),
            other => anyhow::bail!("TOKENVAULT_CODE_SANDBOX must be `on` or `off`, not {other:?}"),
        }
    }

    /// One tenant's share of the code workers (`TOKENVAULT_CODE_TENANT_SHARE`, percent).
    pub fn code_tenant_share(&self) -> anyhow::Result<f64> {
        match self.code_tenant_share {
            1..=100 => Ok(f64::from(self.code_tenant_share) / 100.0),
            other => anyhow::bail!("TOKENVAULT_CODE_TENANT_SHARE must be 1 to 100, not {other}"),
        }
    }

    /// Every value that is checked beyond its type, as the server checks it at start: the
    /// first that is wrong is an error naming its key.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.code_sandbox_required()?;
        self.code_tenant_share()?;
        self.sqlite_synchronous_normal()?;
        self.cors_origins()?;
        self.json_logs()?;
        self.tls()?;
        self.audit_high_water()?;
        if self.transit_address.is_some() && self.transit_token_file.is_none() {
            anyhow::bail!(
                "TOKENVAULT_TRANSIT_TOKEN_FILE is needed with TOKENVAULT_TRANSIT_ADDRESS"
            );
        }
        let port = self.listen.rsplit_once(':').map(|(_, p)| p.parse::<u16>());
        if self.listen.parse::<std::net::SocketAddr>().is_err() && !matches!(port, Some(Ok(_))) {
            anyhow::bail!("TOKENVAULT_LISTEN: {:?} is not host:port", self.listen);
        }
        if let Some(folder) = &self.code_modules
            && !folder.join("node_modules").is_dir()
        {
            anyhow::bail!(
                "TOKENVAULT_CODE_MODULES: {} has no node_modules folder",
                folder.display()
            );
        }
        Ok(())
    }

    /// `TOKENVAULT_AUDIT_HIGH_WATER` within 1..=50,000: at 0 every request would wait in vain
    /// (an outage), and from the per-tenant bound of 100,000 entries would be dropped before any
    /// request waited.
    fn audit_high_water(&self) -> anyhow::Result<()> {
        if !(1..=50_000).contains(&self.audit_high_water) {
            anyhow::bail!(
                "TOKENVAULT_AUDIT_HIGH_WATER: {} is not between 1 and 50000",
                self.audit_high_water
            );
        }
        Ok(())
    }

    /// The server's TLS, when `TOKENVAULT_TLS_CERT` and `TOKENVAULT_TLS_KEY` are both set
    /// (read and checked now); `None` for plain HTTP.
    pub fn tls(&self) -> anyhow::Result<Option<rustls::ServerConfig>> {
        match (&self.tls_cert, &self.tls_key) {
            (None, None) => Ok(None),
            (Some(cert), Some(key)) => tokenvault_http::tls::server_config(cert, key)
                .map(Some)
                .map_err(anyhow::Error::msg),
            (Some(_), None) => {
                anyhow::bail!("TOKENVAULT_TLS_KEY is needed with TOKENVAULT_TLS_CERT")
            }
            (None, Some(_)) => {
                anyhow::bail!("TOKENVAULT_TLS_CERT is needed with TOKENVAULT_TLS_KEY")
            }
        }
    }

    /// Whether logs are JSON lines (`TOKENVAULT_LOG_FORMAT`).
    pub fn json_logs(&self) -> anyhow::Result<bool> {
        match self.log_format.to_ascii_lowercase().as_str() {
            "text" => Ok(false),
            "json" => Ok(true),
            other => anyhow::bail!("TOKENVAULT_LOG_FORMAT must be `text` or `json`, not {other:?}"),
        }
    }

    /// What is in effect, for `tokenvault config check`: every value but the secrets, whose
    /// presence only is told; a database URL without its password.
    pub fn summary(&self) -> serde_json::Value {
        let database = crate::database_url::without_secrets(&self.effective_database_url());
        let master_key = if self.transit_address.is_some() {
            "Transit (TOKENVAULT_TRANSIT_ADDRESS)"
        } else if self.master_key.is_some() {
            "TOKENVAULT_MASTER_KEY"
        } else if self.master_key_file.is_some() {
            "TOKENVAULT_MASTER_KEY_FILE"
        } else {
            "development mode: <data dir>/master.key"
        };
        serde_json::json!({
            "listen": self.listen,
            "tls": self.tls_cert.is_some(),
            "tls_cert": self.tls_cert,
            "tls_key": self.tls_key,
            "database": database,
            "database_url_file": self.database_url_file,
            "data_dir": self.data_dir,
            "master_key": master_key,
            "master_key_file": self.master_key_file,
            "previous_master_keys": self.previous_master_keys.is_some(),
            "transit_address": self.transit_address,
            "transit_mount": self.transit_mount,
            "transit_key": self.transit_key,
            "transit_token_file": self.transit_token_file,
            "bootstrap_key": self.bootstrap_key.is_some(),
            "included_monthly_active_tokens": self.included_monthly_active_tokens,
            "body_limit": self.body_limit,
            "expiry_sweep_secs": self.expiry_sweep_secs,
            "db_max_connections": self.db_max_connections,
            "workers": self.workers,
            "log": self.log,
            "log_format": self.log_format,
            "sqlite_synchronous": self.sqlite_synchronous,
            "code_timeout_ms": self.code_timeout_ms,
            "code_memory_mb": self.code_memory_mb,
            "code_workers": self.code_workers,
            "code_sandbox": self.code_sandbox,
            "code_tenant_share": self.code_tenant_share,
            "code_worker": self.code_worker,
            "code_modules": self.code_modules,
            "proxy_allow_http": self.proxy_allow_http,
            "proxy_allowed_hosts": self.proxy_allowed_hosts,
            "proxy_timeout_ms": self.proxy_timeout_ms,
            "rate_limit_per_second": self.rate_limit_per_second,
            "audit_high_water": self.audit_high_water,
            "cors_origins": self.cors_origins,
        })
    }

    /// Whether SQLite runs with `synchronous=NORMAL` (`TOKENVAULT_SQLITE_SYNCHRONOUS=normal`).
    pub fn sqlite_synchronous_normal(&self) -> anyhow::Result<bool> {
        match self.sqlite_synchronous.to_ascii_lowercase().as_str() {
            "full" => Ok(false),
            "normal" => Ok(true),
            _ => anyhow::bail!("TOKENVAULT_SQLITE_SYNCHRONOUS must be `full` or `normal`"),
        }
    }

    /// The database URL in effect (the SQLite default under `data_dir` when none is set).
    pub fn effective_database_url(&self) -> String {
        match &self.database_url {
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
        config.bootstrap_key = Some(SecretString::from("key_secretsecretsecretsecretsecret12"));
        config.master_key = Some(SecretString::from("bWFzdGVy"));
        config.database_url = Some("postgres://vault:hunter2@db.internal:5432/vault".into());
        let shown = format!("{config:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("db.internal"), "{shown}");
        assert!(!shown.contains("secretsecret"));
        assert!(!shown.contains("bWFzdGVy"));
        assert_eq!(config.master_key.unwrap().expose_secret(), "bWFzdGVy");
    }

    #[test]
    fn the_audit_high_water_mark_is_bounded() {
        let mut config = Config::for_tests(String::new(), "d".into());
        assert!(config.audit_high_water().is_ok(), "the default");
        for refused in [0, 50_001, 100_000] {
            config.audit_high_water = refused;
            let err = config.audit_high_water().unwrap_err().to_string();
            assert!(err.contains("TOKENVAULT_AUDIT_HIGH_WATER"), "{err}");
        }
        config.audit_high_water = 1;
        assert!(config.audit_high_water().is_ok());
    }

    #[test]
    fn cors_origins_are_origins() {
        let mut config = Config::for_tests(String::new(), "d".into());
        config.cors_origins = " https://Shop.example , http://localhost:3000".into();
        assert_eq!(
            config.cors_origins().unwrap(),
            vec!["https://shop.example", "http://localhost:3000"]
        );
        config.cors_origins = "*".into();
        assert_eq!(config.cors_origins().unwrap(), vec!["*"]);
        for bad in [
            "shop.example",
            "https://shop.example/path",
            "https://",
            "*,https://a.example",
        ] {
            config.cors_origins = bad.into();
            assert!(config.cors_origins().is_err(), "{bad}");
        }
    }

    #[test]
    fn default_database_is_sqlite_in_data_dir() {
        let mut config = Config::for_tests(String::new(), "/tmp/tv".into());
        config.database_url = None;
        assert_eq!(
            config.effective_database_url(),
            "sqlite:///tmp/tv/tokenvault.db?mode=rwc"
        );
    }
}
