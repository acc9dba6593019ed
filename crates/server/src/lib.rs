//! The `tokenvault` server: wiring of the adapters around the domain, the background jobs, and
//! the `run(config, listener, shutdown)` seam that both `main` and the tests use.

pub mod backup;
pub mod ceilings;
mod clock;
mod command_vault;
pub mod config;
mod config_keys;
mod config_settings;
mod database_url;
mod dev_key;
pub mod healthcheck;
mod jobs;
mod keys;
mod ready;
mod rotate;
pub mod tenant_commands;
mod wiring;

use std::future::Future;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use secrecy::ExposeSecret;
use tokenvault_domain::Vault;
use tokenvault_domain::application::ApiKey;
use tokenvault_domain::service::ProvisionedTenant;
use tokenvault_http::HttpSettings;
use tokenvault_http::ready::ReadyChecks;
use tokenvault_persistence::StartupLock;
use tokio::sync::watch;
use uuid::Uuid;

pub use clock::SystemClock;
pub use command_vault::{CommandVault, open_vault};
pub use config::Config;
use jobs::{flush_activity, flush_audit, keep_statistics, purge_deleted_tenants, sweep_expired};
pub use keys::current_master_key;
use keys::{create_private_dir, master_cipher, previous_master_keys};
pub use rotate::{rotate_in_transit, rotate_master_key};
pub(crate) use wiring::open_vault_with;
use wiring::{Opened, Shared, open_metered_vault};

/// Logs to stderr at `config.log` (`RUST_LOG` overrides), as text or, where configured, one
/// JSON object per line: the event's fields at the top, the request's span (trace id, method,
/// path) under `span`. For each binary of this crate, once.
///
/// # Errors
/// The configured log format is not one the server knows.
pub fn init_logs(config: &Config) -> anyhow::Result<()> {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.log.filter));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if config.log.json {
        logs.json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .init();
    } else {
        logs.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init();
    }
    Ok(())
}

/// The `main` of each binary of this crate: a code worker when started as one (the vault starts
/// its workers by running the same executable with `code-worker`), decided before anything else
/// runs: no configuration read, no key file opened, no runtime threads started (its seccomp
/// filter holds for its one thread). Else `body` on a multi-threaded runtime.
///
/// # Errors
/// The runtime could not start, or `body` failed.
pub fn enter<F>(body: impl FnOnce() -> F) -> anyhow::Result<()>
where
    F: std::future::Future<Output = anyhow::Result<()>>,
{
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == "code-worker")
    {
        std::process::exit(tokenvault_code::worker::main());
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(body())
}

/// The configured bootstrap key, validated.
fn bootstrap_key(config: &Config) -> anyhow::Result<Option<ApiKey>> {
    config
        .keys
        .bootstrap
        .as_ref()
        .map(|k| {
            ApiKey::parse(k.expose_secret())
                .context("TOKENVAULT_BOOTSTRAP_KEY must be `key_` followed by 32 letters or digits")
        })
        .transpose()
}

/// Refuses to start when a tenant's data key is wrapped under a master key this server was not
/// given (a wrong `TOKENVAULT_MASTER_KEY`, a lost development key, a rotation that left a
/// tenant behind): better a clear message now than a 500 on every token request later.
async fn refuse_foreign_master_keys(vault: &Vault) -> anyhow::Result<()> {
    let foreign = vault
        .tenants
        .tenants_without_master_key()
        .await
        .map_err(|e| anyhow::anyhow!("cannot check the tenant keys: {e}"))?;
    if let Some(first) = foreign.first() {
        anyhow::bail!(
            "{} tenant key(s) (first: tenant {first}) are wrapped under a master key this server \
             was not given; start it with the right TOKENVAULT_MASTER_KEY or \
             TOKENVAULT_MASTER_KEY_FILE (and TOKENVAULT_PREVIOUS_MASTER_KEYS during a rotation)",
            foreign.len()
        );
    }
    Ok(())
}

/// First start: tenant "Default" with a management application; its key is printed once
/// (unless the operator chose it with `TOKENVAULT_BOOTSTRAP_KEY`).
async fn bootstrap(vault: &Vault, config: &Config) -> anyhow::Result<()> {
    let fixed = bootstrap_key(config)?;
    let chosen = fixed.is_some();
    match vault.tenants.bootstrap(fixed).await {
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

/// Runs the server on `listener` until `shutdown` resolves; in-flight requests then finish,
/// changes whose client left included (each wait bounded by the shutdown timeout).
/// Applies migrations and bootstraps first.
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let shared = Shared::new(&config);
    let Opened {
        vault,
        db,
        code,
        startup,
    } = open_metered_vault(&config, &shared, true).await?;
    refuse_foreign_master_keys(&vault).await?;
    bootstrap(&vault, &config).await?;
    startup.release().await;
    let settings = HttpSettings {
        body_limit: config.http.body_limit,
        workers: config.http.workers,
        included_monthly_active_tokens: config.included_monthly_active_tokens,
        rate_limit: shared.limit.clone(),
        cors_origins: config.http.cors_origins.as_slice().to_vec(),
        console: config.http.console,
        tls: config.tls()?,
        metrics: shared.metrics.clone(),
        ready: ReadyChecks::new(vec![
            Arc::new(ready::DatabaseReady(db.connection().clone())),
            Arc::new(ready::WorkersReady(code)),
        ]),
        ..HttpSettings::default()
    };
    let addr = listener.local_addr()?;
    let scheme = if settings.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let server = tokenvault_http::server(listener, vault.clone(), &settings)?;
    tracing::info!(%addr, scheme, "tokenvault listening");

    let (stop_jobs, jobs_stopped) = watch::channel(false);
    let sweeper = tokio::spawn(sweep_expired(
        vault.clone(),
        Duration::from_secs(config.expiry_sweep_secs.max(1)),
        jobs_stopped.clone(),
    ));
    let audit_flusher = tokio::spawn(flush_audit(vault.clone(), jobs_stopped.clone()));
    let purger = tokio::spawn(purge_deleted_tenants(vault.clone(), jobs_stopped.clone()));
    let statistics = tokio::spawn(keep_statistics(db.clone(), jobs_stopped.clone()));
    let flusher = tokio::spawn(flush_activity(vault, jobs_stopped));
    let handle = server.handle();
    let detached = settings.detached.clone();
    let grace = Duration::from_secs(settings.shutdown_timeout_secs);
    tokio::spawn(async move {
        shutdown.await;
        tracing::info!("shutting down: draining in-flight requests");
        // Graceful stop waits only for open connections, then drops the workers with every task
        // on them: first let the changes whose client left (detached, `http/complete.rs`)
        // finish, accepting no new connection meanwhile, for at most the shutdown timeout.
        handle.pause().await;
        if tokio::time::timeout(grace, detached.drain()).await.is_err() {
            tracing::warn!(
                running = detached.running(),
                "changes still running after the shutdown timeout are cut"
            );
        }
        handle.stop(true).await;
    });
    let serving = server.await;
    let _ = stop_jobs.send(true);
    let _ = sweeper.await;
    let _ = flusher.await;
    let _ = audit_flusher.await;
    let _ = purger.await;
    let _ = statistics.await;
    // Last, after the final flushes: the engine's threads end once their queues are written,
    // and a SQLite file's log is copied back into it.
    if let Err(e) = db.close().await {
        tracing::warn!(error = %e, "closing the database pool failed");
    }
    serving?;
    tracing::info!("stopped");
    Ok(())
}

/// `tokenvault migrate`: brings the configured database's schema to this version's (what the
/// server also does at start) and answers the migrations that ran.
pub async fn migrate(config: &Config) -> anyhow::Result<Vec<String>> {
    let url = config.effective_database_url();
    if config.default_database() {
        create_private_dir(&config.data_dir)?;
    }
    let options = config.db_options(1, false);
    let db = tokenvault_persistence::connect(&url, options).await?;
    let startup = StartupLock::acquire(&db).await?;
    let pending = tokenvault_persistence::pending_migrations(&db).await?;
    tokenvault_persistence::migrate(&db).await?;
    startup.release().await;
    db.close().await.context("cannot close the database")?;
    Ok(pending)
}

/// `tokenvault audit verify`: checks every tenant's audit chain (or one tenant's). Returns the
/// report as JSON and whether every chain holds; a broken chain names its first broken entry.
pub async fn verify_audit(
    config: &Config,
    tenant: Option<Uuid>,
) -> anyhow::Result<(serde_json::Value, bool)> {
    let results = open_vault(config)
        .await?
        .run(async |vault| {
            vault
                .audit
                .verify_audit(tenant)
                .await
                .map_err(|e| anyhow::anyhow!("cannot verify the audit log: {e}"))
        })
        .await?;
    let ok = results.iter().all(|r| r.broken.is_none());
    let tenants: Vec<serde_json::Value> = results
        .iter()
        .map(|r| {
            serde_json::json!({
                "tenant_id": r.tenant_id,
                "entries": r.entries,
                "head": r.head.as_ref().map(|h| serde_json::json!({
                    "sequence": h.seq,
                    "hash": h.hash,
                })),
                "ok": r.broken.is_none(),
                "first_broken": r.broken.as_ref().map(|b| serde_json::json!({
                    "sequence": b.seq,
                    "entry_id": b.entry_id,
                    "reason": b.reason,
                })),
            })
        })
        .collect();
    Ok((serde_json::json!({ "ok": ok, "tenants": tenants }), ok))
}
