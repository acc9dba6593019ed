//! The `tokenvault` server: wiring of the adapters around the domain, the background jobs, and
//! the `run(config, listener, shutdown)` seam that both `main` and the tests use.

pub mod config;

use std::future::Future;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use secrecy::ExposeSecret;
use time::OffsetDateTime;
use tokenvault_crypto::Sha256KeyService;
use tokenvault_domain::Vault;
use tokenvault_domain::application::ApiKey;
use tokenvault_domain::ports::Clock;
use tokenvault_domain::service::{Ports, ProvisionedTenant};
use tokenvault_http::HttpSettings;
use tokenvault_persistence::{SeaOrmApplicationRepository, SeaOrmTenantRepository};
use tokio::sync::watch;
use uuid::Uuid;

pub use config::Config;

/// Wall-clock time (microsecond precision, as the databases keep) and UUIDv7 identifiers.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        let now = OffsetDateTime::now_utc();
        now.replace_nanosecond(now.nanosecond() / 1_000 * 1_000)
            .unwrap_or(now)
    }

    fn new_id(&self) -> Uuid {
        Uuid::now_v7()
    }
}

/// Opens (creating if needed) and migrates the database, and builds the use cases on it.
pub async fn open_vault(config: &Config) -> anyhow::Result<Vault> {
    let url = config.effective_database_url();
    if config.database_url.as_deref().is_none_or(str::is_empty) {
        std::fs::create_dir_all(&config.data_dir).with_context(|| {
            format!(
                "cannot create the data directory {}",
                config.data_dir.display()
            )
        })?;
    }
    let db = tokenvault_persistence::connect(&url, config.db_max_connections).await?;
    tokenvault_persistence::migrate(&db).await?;
    Ok(Vault::new(Ports {
        tenants: Arc::new(SeaOrmTenantRepository::new(db.clone())),
        applications: Arc::new(SeaOrmApplicationRepository::new(db)),
        keys: Arc::new(Sha256KeyService),
        clock: Arc::new(SystemClock),
    }))
}

/// The configured bootstrap key, validated.
fn bootstrap_key(config: &Config) -> anyhow::Result<Option<ApiKey>> {
    config
        .bootstrap_key
        .as_ref()
        .map(|k| {
            ApiKey::parse(k.expose_secret())
                .context("TOKENVAULT_BOOTSTRAP_KEY must be `key_` followed by 32 letters or digits")
        })
        .transpose()
}

/// First start: tenant "Default" with a management application; its key is printed once
/// (unless the operator chose it with `TOKENVAULT_BOOTSTRAP_KEY`).
async fn bootstrap(vault: &Vault, config: &Config) -> anyhow::Result<()> {
    let fixed = bootstrap_key(config)?;
    let chosen = fixed.is_some();
    match vault.bootstrap(fixed).await {
        Ok(Some(ProvisionedTenant { tenant, key, .. })) => {
            tracing::info!(tenant_id = %tenant.id, "bootstrapped tenant \"Default\"");
            if chosen {
                println!("Bootstrap management application created with TOKENVAULT_BOOTSTRAP_KEY.");
            } else {
                println!(
                    "Bootstrap management key (shown once, keep it safe): {}",
                    key.expose()
                );
            }
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(e) => Err(anyhow::anyhow!("bootstrap failed: {e}")),
    }
}

async fn sweep_expired(vault: Vault, every: Duration, mut stop: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                match vault.purge_expired_applications().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(deleted = n, "expired applications deleted"),
                    Err(e) => tracing::warn!(error = %e, "expiry sweep failed"),
                }
            }
            _ = stop.changed() => break,
        }
    }
}

/// Runs the server on `listener` until `shutdown` resolves; in-flight requests then finish.
/// Applies migrations and bootstraps first.
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let vault = open_vault(&config).await?;
    bootstrap(&vault, &config).await?;
    let settings = HttpSettings {
        body_limit: config.body_limit,
        workers: config.workers,
        ..HttpSettings::default()
    };
    let addr = listener.local_addr()?;
    let server = tokenvault_http::server(listener, vault.clone(), &settings)?;
    tracing::info!(%addr, "tokenvault listening");

    let (stop_jobs, jobs_stopped) = watch::channel(false);
    let sweeper = tokio::spawn(sweep_expired(
        vault,
        Duration::from_secs(config.expiry_sweep_secs.max(1)),
        jobs_stopped,
    ));
    let handle = server.handle();
    tokio::spawn(async move {
        shutdown.await;
        tracing::info!("shutting down: draining in-flight requests");
        handle.stop(true).await;
    });
    server.await?;
    let _ = stop_jobs.send(true);
    let _ = sweeper.await;
    tracing::info!("stopped");
    Ok(())
}

/// `tokenvault tenants create`: a new tenant and its management key, as JSON.
pub async fn create_tenant(
    config: &Config,
    name: &str,
    owner: Option<Uuid>,
) -> anyhow::Result<serde_json::Value> {
    let vault = open_vault(config).await?;
    let made = vault
        .provision_tenant(name, owner, None)
        .await
        .map_err(|e| anyhow::anyhow!("cannot create the tenant: {e}"))?;
    Ok(serde_json::json!({
        "tenant": tokenvault_http::dto::TenantResponse::from(made.tenant),
        "management_key": made.key.expose(),
    }))
}
