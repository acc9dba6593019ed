//! The `tokenvault` server: wiring of the adapters around the domain, the background jobs, and
//! the `run(config, listener, shutdown)` seam that both `main` and the tests use.

pub mod backup;
pub mod ceilings;
pub mod config;
mod config_keys;
mod dev_key;
pub mod healthcheck;
mod ready;
pub mod tenant_commands;

use std::future::Future;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use futures_util::FutureExt as _;
use secrecy::ExposeSecret;
use time::OffsetDateTime;
use tokenvault_code::{CodeModules, Limits, QuickJsRunner, RunnerSettings, WorkerCommand};
use tokenvault_crypto::{
    EnvelopeCipher, LocalMasterKeys, MasterKey, Sha256KeyService, WrappingChain,
};
use tokenvault_domain::Vault;
use tokenvault_domain::application::ApiKey;
use tokenvault_domain::code::{CodeCall, CodeError, CodeRunner};
use tokenvault_domain::ports::{Cipher as _, Clock, KeyWrapping, TenantRepository as _};
use tokenvault_domain::service::{Ports, ProvisionedTenant};
use tokenvault_expressions::LiquidExpressions;
use tokenvault_http::HttpSettings;
use tokenvault_http::limit::RateLimit;
use tokenvault_http::metrics::Metrics;
use tokenvault_http::ready::ReadyChecks;
use tokenvault_outbound::transit::{TransitKeys, TransitSettings};
use tokenvault_outbound::{HttpForwarder, OutboundSettings};
use tokenvault_persistence::{DatabaseConnection, StartupLock};
use tokenvault_persistence::{
    SeaOrmApplicationRepository, SeaOrmAuditRepository, SeaOrmFormulaRepository,
    SeaOrmIdempotencyRepository, SeaOrmProxyRepository, SeaOrmReactorRepository,
    SeaOrmSessionRepository, SeaOrmTenantRepository, SeaOrmTokenRepository,
};
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

/// The master key in effect: `TOKENVAULT_MASTER_KEY`, else `TOKENVAULT_MASTER_KEY_FILE`, else
/// (development mode) `<data_dir>/master.key`, generated with mode 0600 on first use.
pub fn current_master_key(config: &Config) -> anyhow::Result<MasterKey> {
    if let Some(key) = &config.master_key {
        return MasterKey::from_base64(key.expose_secret()).map_err(anyhow::Error::msg);
    }
    if let Some(path) = &config.master_key_file {
        warn_if_readable_by_others(path);
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the master key file {}", path.display()))?;
        return MasterKey::from_base64(&text).map_err(anyhow::Error::msg);
    }
    let path = config.data_dir.join("master.key");
    if !path.exists() {
        create_private_dir(&config.data_dir)?;
        let key = MasterKey::generate_base64();
        write_private(&path, key.as_bytes())?;
        tracing::warn!(
            path = %path.display(),
            "development mode: generated a master key; set TOKENVAULT_MASTER_KEY or TOKENVAULT_MASTER_KEY_FILE in production"
        );
    }
    let text = std::fs::read_to_string(&path)?;
    MasterKey::from_base64(&text).map_err(anyhow::Error::msg)
}

/// Creates the data directory owner-only (0700). An existing directory is left as it is.
fn create_private_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .with_context(|| format!("cannot create the data directory {}", dir.display()))
}

/// Warns when a master key file may be read by users other than its owner.
fn warn_if_readable_by_others(path: &std::path::Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if let Ok(meta) = std::fs::metadata(path)
            && meta.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(
                path = %path.display(),
                "the master key file is readable by other users; make it 0600"
            );
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

fn write_private(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    Ok(())
}

/// The master keys accepted for unwrapping besides the current one:
/// `TOKENVAULT_PREVIOUS_MASTER_KEYS`, and in development mode `<data_dir>/master.key.previous`
/// and the staged key of a rotation that did not finish (`dev_key`).
fn previous_master_keys(config: &Config) -> anyhow::Result<Vec<MasterKey>> {
    let mut keys: Vec<MasterKey> = config.previous_master_keys.as_ref().map_or_else(
        || Ok(Vec::new()),
        |list| {
            list.expose_secret()
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .map(|k| MasterKey::from_base64(k).map_err(anyhow::Error::msg))
                .collect::<anyhow::Result<_>>()
        },
    )?;
    if let Some(files) = dev_key::DevKeyFiles::of(config) {
        keys.extend(files.previous_keys()?);
    }
    Ok(keys)
}

/// Opens (creating if needed) and migrates the database, and builds the use cases on it.
pub async fn open_vault(config: &Config) -> anyhow::Result<Vault> {
    Ok(open_metered_vault(config, &Shared::new(config))
        .await?
        .vault)
}

/// What the HTTP server and the use cases share: the code runner's counters for `GET /metrics`,
/// and the per-application rate limit, which `req.svc` calls count against too.
struct Shared {
    metrics: Arc<Metrics>,
    limit: Arc<RateLimit>,
}

impl Shared {
    fn new(config: &Config) -> Self {
        Self {
            metrics: Arc::default(),
            limit: Arc::new(RateLimit::new(config.rate_limit_per_second)),
        }
    }
}

/// What [`open_vault_with`] built: the use cases, and the adapters the server also watches.
struct Opened {
    vault: Vault,
    db: DatabaseConnection,
    code: QuickJsRunner,
    startup: StartupLock,
}

/// [`open_vault`] with `shared`.
async fn open_metered_vault(config: &Config, shared: &Shared) -> anyhow::Result<Opened> {
    open_vault_with(config, master_cipher(config).await?, shared).await
}

/// The cipher of this configuration: tenant keys wrapped by Transit when
/// `TOKENVAULT_TRANSIT_ADDRESS` is set (checked now: reachable, token accepted, key present),
/// the local master keys then only unwrapping older tenant keys; else by the local master key.
pub(crate) async fn master_cipher(config: &Config) -> anyhow::Result<EnvelopeCipher> {
    let Some(address) = &config.transit_address else {
        return Ok(EnvelopeCipher::new(
            current_master_key(config)?,
            previous_master_keys(config)?,
        ));
    };
    let token_file = config
        .transit_token_file
        .as_ref()
        .context("TOKENVAULT_TRANSIT_TOKEN_FILE is needed with TOKENVAULT_TRANSIT_ADDRESS")?;
    warn_if_readable_by_others(token_file);
    let token =
        zeroize::Zeroizing::new(std::fs::read_to_string(token_file).with_context(|| {
            format!(
                "TOKENVAULT_TRANSIT_TOKEN_FILE: cannot read {}",
                token_file.display()
            )
        })?);
    let transit = TransitKeys::new(TransitSettings {
        address: address.clone(),
        mount: config.transit_mount.clone(),
        key: config.transit_key.clone(),
        token,
        token_file: Some(token_file.clone()),
        timeout: Duration::from_secs(10),
    })
    .map_err(anyhow::Error::msg)?;
    let version = transit
        .check()
        .await
        .map_err(|e| anyhow::anyhow!("Transit: {e}"))?;
    tracing::info!(key = %config.transit_key, version, "the master key is in Transit");
    let mut previous: Vec<Arc<dyn KeyWrapping>> = Vec::new();
    // Local keys only when named: a development master.key left in the data directory is not
    // taken silently (whoever held it could slip in a tenant key wrapped under it).
    if config.master_key.is_some() || config.master_key_file.is_some() {
        previous.push(Arc::new(LocalMasterKeys::new(
            current_master_key(config)?,
            previous_master_keys(config)?,
        )));
    }
    Ok(EnvelopeCipher::with_wrapping(Arc::new(WrappingChain::new(
        Arc::new(transit),
        previous,
    ))))
}

async fn open_vault_with(
    config: &Config,
    cipher: EnvelopeCipher,
    shared: &Shared,
) -> anyhow::Result<Opened> {
    let url = config.effective_database_url();
    if config.database_url.as_deref().is_none_or(str::is_empty) {
        create_private_dir(&config.data_dir)?;
    }
    let options = tokenvault_persistence::DbOptions {
        max_connections: config.db_max_connections,
        sqlite_synchronous_normal: config.sqlite_synchronous_normal()?,
    };
    let db = tokenvault_persistence::connect(&url, options).await?;
    // Held until this instance has bootstrapped ([`run`]): instances started together on one
    // empty database migrate and bootstrap one after the other.
    let startup = StartupLock::acquire(&db).await?;
    tokenvault_persistence::migrate(&db).await?;
    let command = match &config.code_worker {
        Some(program) => WorkerCommand {
            program: program.clone(),
            args: vec!["code-worker".into()],
        },
        None => {
            WorkerCommand::current_exe().context("cannot find this binary for the code workers")?
        }
    };
    let modules = match config.code_modules.clone() {
        Some(folder) => {
            let read = tokio::task::spawn_blocking(move || {
                CodeModules::read(&folder).map_err(|e| format!("TOKENVAULT_CODE_MODULES: {e}"))
            })
            .await
            .context("reading the code modules")?
            .map_err(|e| anyhow::anyhow!(e))?;
            let (files, broken) = read.counts();
            tracing::info!(files, broken, "code modules compiled");
            read
        }
        None => CodeModules::default(),
    };
    let code = QuickJsRunner::start(RunnerSettings {
        workers: config.code_workers.max(1),
        limits: Limits {
            timeout: Duration::from_millis(config.code_timeout_ms.max(1)),
            memory: config.code_memory_mb.max(1) << 20,
            max_output: 1 << 20,
        },
        command,
        require_sandbox: config.code_sandbox_required()?,
        tenant_share: config.code_tenant_share()?,
        modules: Arc::new(modules),
    })
    .await
    .map_err(|e| anyhow::anyhow!("cannot start the code workers: {e}"))?;
    let forwarder = HttpForwarder::new(OutboundSettings {
        allow_http: config.proxy_allow_http,
        allowed_hosts: config.proxy_allowed_hosts(),
        timeout: Duration::from_millis(config.proxy_timeout_ms.max(1)),
        ..OutboundSettings::default()
    })
    .map_err(|e| anyhow::anyhow!("outbound HTTP (TOKENVAULT_PROXY_ALLOWED_HOSTS): {e}"))?;
    let vault = Vault::new(Ports {
        tenants: Arc::new(SeaOrmTenantRepository::new(db.clone())),
        applications: Arc::new(SeaOrmApplicationRepository::new(db.clone())),
        keys: Arc::new(Sha256KeyService),
        clock: Arc::new(SystemClock),
        tokens: Arc::new(SeaOrmTokenRepository::new(db.clone())),
        formulas: Arc::new(SeaOrmFormulaRepository::new(db.clone())),
        reactors: Arc::new(SeaOrmReactorRepository::new(db.clone())),
        proxies: Arc::new(SeaOrmProxyRepository::new(db.clone())),
        idempotency: Arc::new(SeaOrmIdempotencyRepository::new(db.clone())),
        sessions: Arc::new(SeaOrmSessionRepository::new(db.clone())),
        audit: Arc::new(SeaOrmAuditRepository::new(db.clone())),
        forwarder: Arc::new(forwarder),
        code: Arc::new(CountedRunner {
            inner: code.clone(),
            metrics: shared.metrics.clone(),
        }),
        svc: Arc::new(tokenvault_http::svc::HttpSvcFactory::new(
            shared.limit.clone(),
        )),
        cipher: Arc::new(cipher),
        expressions: Arc::new(LiquidExpressions::new()),
    });
    Ok(Opened {
        vault,
        db,
        code,
        startup,
    })
}

/// The code runner, counting its calls by outcome for `GET /metrics`.
struct CountedRunner {
    inner: QuickJsRunner,
    metrics: Arc<Metrics>,
}

#[async_trait::async_trait]
impl CodeRunner for CountedRunner {
    async fn run(&self, call: CodeCall) -> Result<serde_json::Value, CodeError> {
        let outcome = self.inner.run(call).await;
        self.metrics.code_call(outcome.is_ok());
        outcome
    }
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

/// Refuses to start when a tenant's data key is wrapped under a master key this server was not
/// given (a wrong `TOKENVAULT_MASTER_KEY`, a lost development key, a rotation that left a
/// tenant behind): better a clear message now than a 500 on every token request later.
async fn refuse_foreign_master_keys(vault: &Vault) -> anyhow::Result<()> {
    let foreign = vault
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
                    Err(e) => tracing::warn!(error = %e, "application expiry sweep failed"),
                }
                match vault.purge_expired_tokens().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(deleted = n, "expired tokens deleted"),
                    Err(e) => tracing::warn!(error = %e, "token expiry sweep failed"),
                }
                match vault.purge_expired_sessions().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(deleted = n, "expired sessions deleted"),
                    Err(e) => tracing::warn!(error = %e, "session expiry sweep failed"),
                }
                match vault.purge_idempotency().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(deleted = n, "expired idempotency records deleted"),
                    Err(e) => tracing::warn!(error = %e, "idempotency sweep failed"),
                }
            }
            _ = stop.changed() => break,
        }
    }
}

/// On PostgreSQL, analyzes the tables that changed much since their last analysis every 10 s
/// (`analyze_changed_tables`): the planner's choices stay right where autovacuum is off or has
/// not come round yet. (On SQLite each round does nothing.)
async fn keep_statistics(db: DatabaseConnection, mut stop: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(Duration::from_secs(10));
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                match tokenvault_persistence::analyze_changed_tables(&db).await {
                    Ok(tables) if tables.is_empty() => {}
                    Ok(tables) => tracing::debug!(?tables, "planner statistics refreshed"),
                    Err(e) => tracing::warn!(error = %e, "refreshing planner statistics failed"),
                }
            }
            _ = stop.changed() => break,
        }
    }
}

/// Writes buffered token activity (monthly active tokens) once a second, and once more at stop.
async fn flush_activity(vault: Vault, mut stop: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                if let Err(e) = vault.flush_activity().await {
                    tracing::warn!(error = %e, "activity flush failed");
                }
            }
            _ = stop.changed() => break,
        }
    }
    last_flush("activity", || vault.flush_activity()).await;
}

/// How many times the last flush at stop is tried. A failed flush keeps its events, and the
/// pool may hand the last one a connection opened by an HTTP worker that has stopped (its
/// runtime gone, it fails once and is dropped): a second try gets another.
const FINAL_FLUSH_ATTEMPTS: u32 = 3;
/// The pause between two of those tries.
const FINAL_FLUSH_PAUSE: Duration = Duration::from_millis(100);
/// The longest the last flushes may hold up the stop (a database that is down).
const FINAL_FLUSH_DEADLINE: Duration = Duration::from_secs(30);

/// The last `what` flush at stop: up to [`FINAL_FLUSH_ATTEMPTS`] tries, [`FINAL_FLUSH_PAUSE`]
/// apart, within [`FINAL_FLUSH_DEADLINE`].
async fn last_flush<T, F: Future<Output = Result<T, tokenvault_domain::Error>>>(
    what: &str,
    flush: impl Fn() -> F,
) {
    let tries = async {
        for attempt in 1..=FINAL_FLUSH_ATTEMPTS {
            match flush().await {
                Ok(_) => return,
                Err(e) => tracing::warn!(error = %e, attempt, what, "final flush failed"),
            }
            tokio::time::sleep(FINAL_FLUSH_PAUSE).await;
        }
    };
    if tokio::time::timeout(FINAL_FLUSH_DEADLINE, tries)
        .await
        .is_err()
    {
        tracing::warn!(
            what,
            "the final flush did not finish in time; its events are lost"
        );
    }
}

/// Appends buffered audit events to their tenants' chains every 200 ms, or as soon as
/// [`AUDIT_BATCH`] are waiting, and once more at stop (a crash loses at most the last 200 ms of
/// entries).
async fn flush_audit(vault: Vault, mut stop: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(AUDIT_POLL);
    let mut last = tokio::time::Instant::now();
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                if last.elapsed() < AUDIT_EVERY && vault.audit_backlog() < AUDIT_BATCH {
                    continue;
                }
                last = tokio::time::Instant::now();
                if let Err(e) = vault.flush_audit().await {
                    tracing::warn!(error = %e, "audit flush failed");
                }
            }
            _ = stop.changed() => break,
        }
    }
    last_flush("audit", || vault.flush_audit()).await;
}

/// The longest an audit event waits in memory before its flush starts.
const AUDIT_EVERY: Duration = Duration::from_millis(200);
/// A backlog that is flushed at once: on SQLite a flush holds the one write lock for its whole
/// transaction, so bounding its size bounds how long token inserts wait behind it (the p99 of
/// `POST /tokens`, docs/performance.md).
const AUDIT_BATCH: usize = 128;
/// How often the backlog is looked at.
const AUDIT_POLL: Duration = Duration::from_millis(10);

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
    } = open_metered_vault(&config, &shared).await?;
    refuse_foreign_master_keys(&vault).await?;
    bootstrap(&vault, &config).await?;
    startup.release().await;
    let settings = HttpSettings {
        body_limit: config.body_limit,
        workers: config.workers,
        included_monthly_active_tokens: config.included_monthly_active_tokens,
        rate_limit: shared.limit.clone(),
        cors_origins: config.cors_origins()?,
        tls: config.tls()?,
        metrics: shared.metrics.clone(),
        ready: ReadyChecks::new(vec![
            Arc::new(ready::DatabaseReady(db.clone())),
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
    let statistics = tokio::spawn(keep_statistics(db, jobs_stopped.clone()));
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
    server.await?;
    let _ = stop_jobs.send(true);
    let _ = sweeper.await;
    let _ = flusher.await;
    let _ = audit_flusher.await;
    let _ = statistics.await;
    tracing::info!("stopped");
    Ok(())
}

/// `tokenvault migrate`: brings the configured database's schema to this version's (what the
/// server also does at start) and answers the migrations that ran.
pub async fn migrate(config: &Config) -> anyhow::Result<Vec<String>> {
    let url = config.effective_database_url();
    if config.database_url.as_deref().is_none_or(str::is_empty) {
        create_private_dir(&config.data_dir)?;
    }
    let options = tokenvault_persistence::DbOptions {
        max_connections: 1,
        sqlite_synchronous_normal: config.sqlite_synchronous_normal()?,
    };
    let db = tokenvault_persistence::connect(&url, options).await?;
    let startup = StartupLock::acquire(&db).await?;
    let pending = tokenvault_persistence::pending_migrations(&db).await?;
    tokenvault_persistence::migrate(&db).await?;
    startup.release().await;
    Ok(pending)
}

/// `tokenvault audit verify`: checks every tenant's audit chain (or one tenant's). Returns the
/// report as JSON and whether every chain holds; a broken chain names its first broken entry.
pub async fn verify_audit(
    config: &Config,
    tenant: Option<Uuid>,
) -> anyhow::Result<(serde_json::Value, bool)> {
    let vault = open_vault(config).await?;
    let results = vault
        .verify_audit(tenant)
        .await
        .map_err(|e| anyhow::anyhow!("cannot verify the audit log: {e}"))?;
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

/// `tokenvault keys rotate-master` with the master key in Transit: re-wraps every tenant key
/// under the Transit key's newest version (rotate it in Transit first), and any tenant key still
/// wrapped by a local master key (moving a vault to Transit).
pub async fn rotate_in_transit(config: &Config) -> anyhow::Result<serde_json::Value> {
    let Opened { vault, .. } =
        open_vault_with(config, master_cipher(config).await?, &Shared::new(config)).await?;
    let rewrapped = vault
        .rotate_master_key()
        .await
        .map_err(|e| anyhow::anyhow!("rotation failed: {e}"))?;
    Ok(serde_json::json!({
        "rewrapped_tenant_keys": rewrapped,
        "master_key": "Transit",
        "transit_key": config.transit_key,
    }))
}

/// `tokenvault keys rotate-master`: re-wraps every tenant key under `new_key` (base64). The
/// configured master key (and any previous ones) must still unwrap the current keys.
///
/// In development mode (no master key configured) the data directory's `master.key` is
/// replaced too, in the steps of `dev_key`: the new key is staged in `master.key.new` before
/// the re-wrap, and once it is done the old key moves to `master.key.previous` and the new one
/// to `master.key`. With a configured key the files are the operator's: nothing is written.
pub async fn rotate_master_key(
    config: &Config,
    new_key: &str,
) -> anyhow::Result<serde_json::Value> {
    let new = MasterKey::from_base64(new_key).map_err(anyhow::Error::msg)?;
    let current = current_master_key(config)?;
    let mut accepted = vec![current.clone()];
    accepted.extend(previous_master_keys(config)?);
    let id = new.id_hex();
    let files = dev_key::DevKeyFiles::of(config);
    let replaces_file = files.is_some() && id != current.id_hex();
    if let Some(files) = &files {
        if replaces_file {
            files.stage(&new, new_key)?;
        } else {
            // Already the current key: nothing to replace, but never beside a staged other key.
            files.refuse_other_staged(&new)?;
        }
    }
    let Opened { vault, db, .. } = open_vault_with(
        config,
        EnvelopeCipher::new(new.clone(), accepted),
        &Shared::new(config),
    )
    .await?;
    let rewrapped = vault
        .rotate_master_key()
        .await
        .map_err(|e| anyhow::anyhow!("rotation failed: {e}"))?;
    let mut printed =
        serde_json::json!({ "rewrapped_tenant_keys": rewrapped, "master_key_id": id });
    if let Some(files) = files.filter(|_| replaces_file) {
        // A key of the old `master.key.previous` is kept only while a tenant key the re-wrap
        // left behind (changed meanwhile, see `Vault::rotate_master_key`) still needs it.
        let wrapped = SeaOrmTenantRepository::new(db)
            .data_keys()
            .await
            .map_err(|e| anyhow::anyhow!("cannot read the tenant keys: {e}"))?;
        files.finish(&current, |key| {
            let only = EnvelopeCipher::new(key.clone(), Vec::new());
            // A local key unwraps without waiting: its future is ready at once.
            wrapped.iter().any(|(tenant, w)| {
                !w.is_empty()
                    && only
                        .load_tenant_key(*tenant, w)
                        .now_or_never()
                        .is_some_and(|r| r.is_ok())
            })
        })?;
        printed["master_key_file"] = files.current.display().to_string().into();
    }
    Ok(printed)
}
