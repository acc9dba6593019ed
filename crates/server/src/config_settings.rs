//! The configuration as it is written: flat keys (`listen`, `code_timeout_ms`, …), in a TOML
//! file or as `TOKENVAULT_<KEY>` in the environment, each with its default. [`Settings`] is
//! what figment reads; turning it into the typed [`Config`] checks every value at load, and
//! the first that is wrong is an error naming its key.

use std::path::{Path, PathBuf};

use figment::providers::{Env, Format, Serialized, Toml};
use figment::{Figment, Provider};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use crate::config::{
    Code, Config, CorsOrigins, Database, Http, Keys, Log, Proxy, Synchronous, TenantShare, Tls,
    Transit,
};

/// Every key, as read (`TOKENVAULT_` and the key in capitals; `DATABASE_URL` as it is). The
/// README's Operating section lists them.
#[derive(Deserialize)]
pub(crate) struct Settings {
    listen: String,
    database_url: Option<String>,
    database_url_file: Option<PathBuf>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    data_dir: PathBuf,
    bootstrap_key: Option<SecretString>,
    master_key: Option<SecretString>,
    master_key_file: Option<PathBuf>,
    previous_master_keys: Option<SecretString>,
    transit_address: Option<String>,
    transit_mount: String,
    transit_key: String,
    transit_token_file: Option<PathBuf>,
    included_monthly_active_tokens: u64,
    body_limit: usize,
    expiry_sweep_secs: u64,
    db_max_connections: u32,
    workers: Option<usize>,
    log: String,
    log_format: String,
    sqlite_synchronous: String,
    code_timeout_ms: u64,
    code_memory_mb: usize,
    code_workers: usize,
    code_sandbox: String,
    code_tenant_share: u8,
    code_worker: Option<PathBuf>,
    code_modules: Option<PathBuf>,
    proxy_allow_http: bool,
    proxy_allowed_hosts: String,
    proxy_timeout_ms: u64,
    rate_limit_per_second: u32,
    audit_high_water: usize,
    cors_origins: String,
    console: String,
}

/// The defaults of the keys that have one.
#[derive(Serialize)]
pub(crate) struct Defaults {
    pub(crate) listen: &'static str,
    pub(crate) transit_mount: &'static str,
    pub(crate) transit_key: &'static str,
    pub(crate) data_dir: &'static str,
    pub(crate) body_limit: usize,
    pub(crate) expiry_sweep_secs: u64,
    pub(crate) db_max_connections: u32,
    pub(crate) log: &'static str,
    pub(crate) log_format: &'static str,
    pub(crate) included_monthly_active_tokens: u64,
    pub(crate) sqlite_synchronous: &'static str,
    pub(crate) code_timeout_ms: u64,
    pub(crate) code_memory_mb: usize,
    pub(crate) code_workers: usize,
    pub(crate) code_sandbox: &'static str,
    pub(crate) code_tenant_share: u8,
    pub(crate) proxy_allow_http: bool,
    pub(crate) proxy_allowed_hosts: &'static str,
    pub(crate) proxy_timeout_ms: u64,
    pub(crate) rate_limit_per_second: u32,
    pub(crate) audit_high_water: usize,
    pub(crate) cors_origins: &'static str,
    pub(crate) console: &'static str,
}

pub(crate) const DEFAULTS: Defaults = Defaults {
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
    console: "on",
};

/// One of two words, in any case.
fn either(key: &str, value: &str, yes: &str, no: &str) -> anyhow::Result<bool> {
    match value.to_ascii_lowercase() {
        v if v == yes => Ok(true),
        v if v == no => Ok(false),
        _ => anyhow::bail!("TOKENVAULT_{key} must be `{yes}` or `{no}`, not {value:?}"),
    }
}

/// A comma-separated list, its entries trimmed, empty ones dropped.
fn list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(str::to_string)
        .collect()
}

/// `TOKENVAULT_AUDIT_HIGH_WATER` within 1..=50,000: at 0 every request would wait in vain (an
/// outage), and from the per-tenant bound of 100,000 entries would be dropped before any
/// request waited.
fn audit_high_water(value: usize) -> anyhow::Result<usize> {
    if !(1..=50_000).contains(&value) {
        anyhow::bail!("TOKENVAULT_AUDIT_HIGH_WATER: {value} is not between 1 and 50000");
    }
    Ok(value)
}

/// `TOKENVAULT_LISTEN`: `host:port`.
fn listen(value: String) -> anyhow::Result<String> {
    let port = value.rsplit_once(':').map(|(_, p)| p.parse::<u16>());
    if value.parse::<std::net::SocketAddr>().is_err() && !matches!(port, Some(Ok(_))) {
        anyhow::bail!("TOKENVAULT_LISTEN: {value:?} is not host:port");
    }
    Ok(value)
}

impl TryFrom<Settings> for Config {
    type Error = anyhow::Error;

    fn try_from(s: Settings) -> anyhow::Result<Self> {
        let tls = match (s.tls_cert, s.tls_key) {
            (None, None) => None,
            (Some(cert), Some(key)) => Some(Tls { cert, key }),
            (Some(_), None) => {
                anyhow::bail!("TOKENVAULT_TLS_KEY is needed with TOKENVAULT_TLS_CERT")
            }
            (None, Some(_)) => {
                anyhow::bail!("TOKENVAULT_TLS_CERT is needed with TOKENVAULT_TLS_KEY")
            }
        };
        let transit = match (s.transit_address, s.transit_token_file) {
            (None, _) => None,
            (Some(address), Some(token_file)) => Some(Transit {
                address,
                mount: s.transit_mount,
                key: s.transit_key,
                token_file,
            }),
            (Some(_), None) => anyhow::bail!(
                "TOKENVAULT_TRANSIT_TOKEN_FILE is needed with TOKENVAULT_TRANSIT_ADDRESS"
            ),
        };
        let database_url = match (s.database_url, s.database_url_file) {
            (Some(url), _) if !url.is_empty() => Some(url),
            (_, Some(path)) => {
                let url = std::fs::read_to_string(&path).map_err(|e| {
                    anyhow::anyhow!(
                        "TOKENVAULT_DATABASE_URL_FILE: cannot read {}: {e}",
                        path.display()
                    )
                })?;
                Some(url.trim().to_string())
            }
            (url, None) => url,
        };
        Ok(Config {
            http: Http {
                listen: listen(s.listen)?,
                tls,
                body_limit: s.body_limit,
                workers: s.workers,
                cors_origins: CorsOrigins::parse(&s.cors_origins)?,
                rate_limit_per_second: s.rate_limit_per_second,
                console: either("CONSOLE", &s.console, "on", "off")?,
            },
            database: Database {
                url: database_url,
                max_connections: s.db_max_connections,
                synchronous: if either(
                    "SQLITE_SYNCHRONOUS",
                    &s.sqlite_synchronous,
                    "normal",
                    "full",
                )? {
                    Synchronous::Normal
                } else {
                    Synchronous::Full
                },
            },
            keys: Keys {
                bootstrap: s.bootstrap_key,
                master: s.master_key,
                master_file: s.master_key_file,
                previous: s.previous_master_keys,
                transit,
            },
            code: Code {
                timeout_ms: s.code_timeout_ms,
                memory_mb: s.code_memory_mb,
                workers: s.code_workers,
                sandbox: either("CODE_SANDBOX", &s.code_sandbox, "on", "off")?,
                tenant_share: TenantShare::new(s.code_tenant_share)?,
                worker: s.code_worker,
                modules: s.code_modules,
            },
            proxy: Proxy {
                allow_http: s.proxy_allow_http,
                allowed_hosts: list(&s.proxy_allowed_hosts),
                timeout_ms: s.proxy_timeout_ms,
            },
            log: Log {
                filter: s.log,
                json: either("LOG_FORMAT", &s.log_format, "json", "text")?,
            },
            data_dir: s.data_dir,
            included_monthly_active_tokens: s.included_monthly_active_tokens,
            expiry_sweep_secs: s.expiry_sweep_secs,
            audit_high_water: audit_high_water(s.audit_high_water)?,
        })
    }
}

impl Config {
    /// Loads the layers and checks every value. `file` is required when given explicitly;
    /// otherwise `TOKENVAULT_CONFIG` (or `tokenvault.toml` if present) is read. A key of the
    /// file that is not a configuration key, a value of the wrong type and a value out of its
    /// range are each an error naming the key.
    pub fn load(file: Option<&Path>) -> anyhow::Result<Self> {
        let mut figment = Figment::from(Serialized::defaults(DEFAULTS));
        let toml = match file {
            Some(path) => Toml::file_exact(path),
            None => match std::env::var_os("TOKENVAULT_CONFIG") {
                Some(path) => Toml::file_exact(PathBuf::from(path)),
                None => Toml::file("tokenvault.toml"),
            },
        };
        let keys = toml.data()?;
        let known = crate::config_keys::field_names::<Settings>();
        for dict in keys.values() {
            let name = file.map_or_else(
                || "the configuration file".into(),
                |p| p.display().to_string(),
            );
            crate::config_keys::check(&name, dict.keys().map(String::as_str), &known)
                .map_err(anyhow::Error::msg)?;
        }
        figment = figment.merge(toml);
        let settings: Settings = figment
            .merge(Env::prefixed("TOKENVAULT_").ignore(&["CONFIG"]))
            .merge(Env::raw().only(&["DATABASE_URL"]))
            .extract()?;
        Self::try_from(settings)
    }

    /// Defaults only, for tests: listen on port 0 of loopback, data in `data_dir`.
    pub fn for_tests(database_url: String, data_dir: PathBuf) -> Self {
        Self {
            http: Http {
                listen: "127.0.0.1:0".into(),
                tls: None,
                body_limit: DEFAULTS.body_limit,
                workers: Some(1),
                cors_origins: CorsOrigins::default(),
                rate_limit_per_second: 0,
                console: true,
            },
            database: Database {
                url: Some(database_url),
                max_connections: 4,
                synchronous: Synchronous::Full,
            },
            keys: Keys {
                bootstrap: None,
                master: None,
                master_file: None,
                previous: None,
                transit: None,
            },
            code: Code {
                timeout_ms: DEFAULTS.code_timeout_ms,
                memory_mb: DEFAULTS.code_memory_mb,
                workers: 2,
                sandbox: true,
                tenant_share: TenantShare::new(DEFAULTS.code_tenant_share)
                    .unwrap_or_else(|e| panic!("the default tenant share: {e}")),
                worker: None,
                modules: None,
            },
            proxy: Proxy {
                allow_http: false,
                allowed_hosts: Vec::new(),
                timeout_ms: DEFAULTS.proxy_timeout_ms,
            },
            log: Log {
                filter: DEFAULTS.log.into(),
                json: false,
            },
            data_dir,
            included_monthly_active_tokens: DEFAULTS.included_monthly_active_tokens,
            expiry_sweep_secs: 1,
            audit_high_water: DEFAULTS.audit_high_water,
        }
    }
}

impl Transit {
    /// The server at `address` with the default mount and key name, its token in
    /// `token_file`.
    pub fn new(address: String, token_file: PathBuf) -> Self {
        Self {
            address,
            mount: DEFAULTS.transit_mount.into(),
            key: DEFAULTS.transit_key.into(),
            token_file,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults, as a `Settings`, with `change` applied to their TOML.
    fn settings(change: &str) -> Settings {
        use figment::providers::{Format, Serialized, Toml};
        figment::Figment::from(Serialized::defaults(DEFAULTS))
            .merge(Toml::string(change))
            .extract()
            .unwrap()
    }

    fn refused(change: &str) -> String {
        Config::try_from(settings(change))
            .err()
            .unwrap()
            .to_string()
    }

    #[test]
    fn every_value_is_checked_at_load_naming_its_key() {
        let config = Config::try_from(settings("")).unwrap();
        assert_eq!(config.http.listen, "127.0.0.1:8080");
        assert!(config.code.sandbox && !config.log.json);
        assert_eq!(config.database.synchronous, Synchronous::Full);
        for (change, key) in [
            ("code_sandbox = 'maybe'", "TOKENVAULT_CODE_SANDBOX"),
            ("log_format = 'xml'", "TOKENVAULT_LOG_FORMAT"),
            (
                "sqlite_synchronous = 'off'",
                "TOKENVAULT_SQLITE_SYNCHRONOUS",
            ),
            ("code_tenant_share = 0", "TOKENVAULT_CODE_TENANT_SHARE"),
            ("code_tenant_share = 101", "TOKENVAULT_CODE_TENANT_SHARE"),
            ("audit_high_water = 0", "TOKENVAULT_AUDIT_HIGH_WATER"),
            ("audit_high_water = 50001", "TOKENVAULT_AUDIT_HIGH_WATER"),
            ("listen = 'nowhere'", "TOKENVAULT_LISTEN"),
            ("console = 'maybe'", "TOKENVAULT_CONSOLE"),
            ("cors_origins = 'shop.example'", "TOKENVAULT_CORS_ORIGINS"),
            (
                "cors_origins = '*,https://a.example'",
                "TOKENVAULT_CORS_ORIGINS",
            ),
            ("tls_cert = 'c.pem'", "TOKENVAULT_TLS_KEY"),
            ("tls_key = 'k.pem'", "TOKENVAULT_TLS_CERT"),
            (
                "transit_address = 'https://vault:8200'",
                "TOKENVAULT_TRANSIT_TOKEN_FILE",
            ),
            (
                "database_url_file = '/nonexistent/url'",
                "TOKENVAULT_DATABASE_URL_FILE",
            ),
        ] {
            let err = refused(change);
            assert!(err.contains(key), "{change}: {err}");
        }
        let config = Config::try_from(settings(
            "code_sandbox = 'OFF'\nlog_format = 'Json'\nsqlite_synchronous = 'normal'\n\
             proxy_allowed_hosts = ' a.internal, 10.0.0.0/8 ,'",
        ))
        .unwrap();
        assert!(!config.code.sandbox && config.log.json);
        assert_eq!(config.database.synchronous, Synchronous::Normal);
        assert_eq!(config.proxy.allowed_hosts, vec!["a.internal", "10.0.0.0/8"]);
    }

    #[test]
    fn cors_origins_are_origins() {
        assert_eq!(
            CorsOrigins::parse(" https://Shop.example , http://localhost:3000")
                .unwrap()
                .as_slice(),
            vec!["https://shop.example", "http://localhost:3000"]
        );
        assert_eq!(CorsOrigins::parse("*").unwrap().as_slice(), ["*"]);
        assert!(CorsOrigins::parse("").unwrap().as_slice().is_empty());
        assert!(TenantShare::new(0).is_err() && TenantShare::new(101).is_err());
        assert!((TenantShare::new(75).unwrap().fraction() - 0.75).abs() < 1e-9);
        for bad in ["https://shop.example/path", "https://"] {
            assert!(CorsOrigins::parse(bad).is_err(), "{bad}");
        }
    }
}
