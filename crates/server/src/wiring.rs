//! The adapters wired into the use cases: the database (opened, locked for startup,
//! migrated), the code workers, outbound HTTP, the cipher, and the counters and rate limit the
//! HTTP server shares with them.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokenvault_code::{CodeModules, Limits, QuickJsRunner, RunnerSettings, WorkerCommand};
use tokenvault_crypto::{EnvelopeCipher, Sha256KeyService};
use tokenvault_domain::Vault;
use tokenvault_domain::ports::code::{CodeCall, CodeError, CodeRunner};
use tokenvault_domain::service::Ports;
use tokenvault_expressions::LiquidExpressions;
use tokenvault_http::limit::RateLimit;
use tokenvault_http::metrics::Metrics;
use tokenvault_outbound::{HttpForwarder, OutboundSettings};
use tokenvault_persistence::{Database, StartupLock};
use tokenvault_persistence::{
    SeaOrmApplicationRepository, SeaOrmAuditRepository, SeaOrmFormulaRepository,
    SeaOrmIdempotencyRepository, SeaOrmProxyRepository, SeaOrmReactorRepository,
    SeaOrmSessionRepository, SeaOrmTenantRepository, SeaOrmTokenRepository, SeaOrmUsageRepository,
};

use crate::clock::SystemClock;
use crate::config::Config;
use crate::keys::{create_private_dir, master_cipher};

/// What the HTTP server and the use cases share: the code runner's counters for `GET /metrics`,
/// and the per-application rate limit, which `req.svc` calls count against too.
pub(crate) struct Shared {
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) limit: Arc<RateLimit>,
}

impl Shared {
    pub(crate) fn new(config: &Config) -> Self {
        Self {
            metrics: Arc::default(),
            limit: Arc::new(RateLimit::new(config.http.rate_limit_per_second)),
        }
    }
}

/// What [`open_vault_with`] built: the use cases, and the adapters the server also watches.
pub(crate) struct Opened {
    pub(crate) vault: Vault,
    pub(crate) db: Database,
    pub(crate) code: QuickJsRunner,
    pub(crate) startup: StartupLock,
}

/// [`open_vault`] with `shared`; `serving`: for the server (keys kept in memory), or for one
/// CLI command.
pub(crate) async fn open_metered_vault(
    config: &Config,
    shared: &Shared,
    serving: bool,
) -> anyhow::Result<Opened> {
    open_vault_with(config, master_cipher(config).await?, shared, serving).await
}

/// The use cases on the configured database, with `cipher`; `serving` as for
/// [`open_metered_vault`].
pub(crate) async fn open_vault_with(
    config: &Config,
    cipher: EnvelopeCipher,
    shared: &Shared,
    serving: bool,
) -> anyhow::Result<Opened> {
    let url = config.effective_database_url();
    if config.default_database() {
        create_private_dir(&config.data_dir)?;
    }
    let options = config.db_options(config.database.max_connections, serving);
    let db = tokenvault_persistence::connect(&url, options).await?;
    // Held until this instance has bootstrapped ([`run`]): instances started together on one
    // empty database migrate and bootstrap one after the other.
    let startup = StartupLock::acquire(&db).await?;
    tokenvault_persistence::migrate(&db).await?;
    let command = match &config.code.worker {
        Some(program) => WorkerCommand {
            program: program.clone(),
            args: vec!["code-worker".into()],
        },
        None => {
            WorkerCommand::current_exe().context("cannot find this binary for the code workers")?
        }
    };
    let modules = match config.code.modules.clone() {
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
        workers: config.code.workers.max(1),
        limits: Limits {
            timeout: Duration::from_millis(config.code.timeout_ms.max(1)),
            memory: config.code.memory_mb.max(1) << 20,
            max_output: 1 << 20,
        },
        command,
        require_sandbox: config.code.sandbox,
        tenant_share: config.code_tenant_share(),
        modules: Arc::new(modules),
    })
    .await
    .map_err(|e| anyhow::anyhow!("cannot start the code workers: {e}"))?;
    let forwarder = HttpForwarder::new(OutboundSettings {
        allow_http: config.proxy.allow_http,
        allowed_hosts: config.proxy.allowed_hosts.clone(),
        timeout: Duration::from_millis(config.proxy.timeout_ms.max(1)),
        ..OutboundSettings::default()
    })
    .map_err(|e| anyhow::anyhow!("outbound HTTP (TOKENVAULT_PROXY_ALLOWED_HOSTS): {e}"))?;
    let vault = Vault::new(Ports {
        tenants: Arc::new(SeaOrmTenantRepository::new(db.clone())),
        applications: Arc::new(SeaOrmApplicationRepository::new(db.clone())),
        keys: Arc::new(Sha256KeyService),
        clock: Arc::new(SystemClock),
        tokens: Arc::new(SeaOrmTokenRepository::new(db.clone())),
        usage: Arc::new(SeaOrmUsageRepository::new(db.clone())),
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
        svc: Arc::new(tokenvault_http::svc::HttpSvcWire::new(shared.limit.clone())),
        cipher: Arc::new(cipher),
        expressions: Arc::new(LiquidExpressions::new()),
    });
    vault.audit.set_high_water(config.audit_high_water);
    Ok(Opened {
        vault,
        db,
        code,
        startup,
    })
}

/// The code runner, counting its calls by outcome for `GET /metrics`.
pub(crate) struct CountedRunner {
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

    async fn compiles(&self, tenant_id: uuid::Uuid, code: &str) -> Result<bool, CodeError> {
        self.inner.compiles(tenant_id, code).await
    }
}
