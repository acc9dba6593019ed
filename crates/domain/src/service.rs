//! The use cases (driving port): every operation the inbound adapters may call, by area.
//! [`Vault`] holds the areas ([`Areas`]); `areas.rs` lists the ports each one is given; each
//! area's use cases live in the module of its name (`tokens/*`, `applications`, `proxies/*`,
//! `reactors/*`, `sessions`, `audit/*`, `usage`, `tenants`, `idempotency`).

use std::sync::Arc;

use crate::application::{ApiKey, Application};
use crate::ports::code::CodeRunner;
use crate::ports::forward::Forwarder;
use crate::ports::svc::SvcWire;
use crate::ports::{
    ApplicationRepository, AuditRepository, Cipher, Clock, Expressions, FormulaRepository,
    IdempotencyRepository, KeyService, ProxyRepository, ReactorRepository, SessionRepository,
    TenantRepository, TokenRepository, UsageRepository,
};
use crate::tenant::Tenant;

/// The ports a [`Vault`] is built from.
#[derive(Clone)]
pub struct Ports {
    /// Tenant storage.
    pub tenants: Arc<dyn TenantRepository>,
    /// Application storage.
    pub applications: Arc<dyn ApplicationRepository>,
    /// Key generation and hashing.
    pub keys: Arc<dyn KeyService>,
    /// Time and identifiers.
    pub clock: Arc<dyn Clock>,
    /// Token storage.
    pub tokens: Arc<dyn TokenRepository>,
    /// Token counts and monthly activity (usually the token storage's adapter too).
    pub usage: Arc<dyn UsageRepository>,
    /// Envelope encryption and fingerprints.
    pub cipher: Arc<dyn Cipher>,
    /// The expression language.
    pub expressions: Arc<dyn Expressions>,
    /// Reactor formula storage.
    pub formulas: Arc<dyn FormulaRepository>,
    /// Reactor storage.
    pub reactors: Arc<dyn ReactorRepository>,
    /// The code sandbox.
    pub code: Arc<dyn CodeRunner>,
    /// `req.svc`'s JSON and rate limit, for code acting as an application.
    pub svc: Arc<dyn SvcWire>,
    /// Proxy storage.
    pub proxies: Arc<dyn ProxyRepository>,
    /// Sends proxied requests to their destinations.
    pub forwarder: Arc<dyn Forwarder>,
    /// Idempotent requests.
    pub idempotency: Arc<dyn IdempotencyRepository>,
    /// Session storage.
    pub sessions: Arc<dyn SessionRepository>,
    /// The audit log.
    pub audit: Arc<dyn AuditRepository>,
}

/// A tenant made outside the API (bootstrap, CLI) with its management key.
#[derive(Debug)]
pub struct ProvisionedTenant {
    /// The tenant.
    pub tenant: Tenant,
    /// Its management application.
    pub application: Application,
    /// The application's key, to be shown once.
    pub key: ApiKey,
}

/// The vault's use cases, by area. Each checks the caller's permission, validates, and confines
/// every read and write to the caller's tenant. Cheap to clone (one `Arc`).
#[derive(Clone)]
pub struct Vault(Arc<Areas>);

/// The areas of a [`Vault`] (its `Deref` target): `vault.tokens.tokenize(…)`.
pub struct Areas {
    /// Tokens.
    pub tokens: Tokens,
    /// Applications.
    pub applications: Applications,
    /// API keys to callers.
    pub auth: Authenticator,
    /// Sessions.
    pub sessions: Sessions,
    /// Proxies.
    pub proxies: Proxies,
    /// Reactors and formulas.
    pub reactors: Reactors,
    /// The audit log.
    pub audit: AuditLog,
    /// Monthly activity and the usage report.
    pub usage: Usage,
    /// Tenants.
    pub tenants: Tenants,
    /// Idempotent requests.
    pub idempotency: Idempotency,
}

impl std::ops::Deref for Vault {
    type Target = Areas;

    fn deref(&self) -> &Areas {
        &self.0
    }
}

impl Vault {
    /// Builds the areas over the given ports, each with the ports it uses.
    pub fn new(ports: Ports) -> Self {
        Self(Arc::new_cyclic(|vault| Areas::new(ports, vault)))
    }

    /// The vault a [`std::sync::Weak`] of its areas points to (gone only while the process
    /// stops).
    fn upgrade(vault: &std::sync::Weak<Areas>) -> Result<Self, crate::error::Error> {
        vault
            .upgrade()
            .map(Self)
            .ok_or_else(|| crate::error::Error::internal("the vault is shutting down"))
    }
}

impl Areas {
    fn new(p: Ports, vault: &std::sync::Weak<Areas>) -> Self {
        let audit_buffer = Arc::new(audit::buffer::AuditBuffer::default());
        let activity = Arc::new(activity::ActivityBuffer::default());
        let shared = Shared {
            clock: p.clock.clone(),
            tenants: p.tenants.clone(),
            cipher: p.cipher.clone(),
            audit_trail: audit_buffer.clone(),
            activity_trail: activity.clone(),
        };
        let tokens = Tokens {
            store: p.tokens.clone(),
            cipher: p.cipher.clone(),
            expressions: p.expressions.clone(),
            clock: p.clock.clone(),
            shared: shared.clone(),
        };
        let auth = Authenticator {
            applications: p.applications.clone(),
            sessions: p.sessions.clone(),
            keys: p.keys.clone(),
            clock: p.clock.clone(),
            audit: audit_buffer.clone(),
            key_tenants: Arc::default(),
        };
        Self {
            applications: Applications {
                store: p.applications.clone(),
                sessions: p.sessions.clone(),
                keys: p.keys.clone(),
                clock: p.clock.clone(),
                shared: shared.clone(),
            },
            sessions: Sessions {
                store: p.sessions.clone(),
                keys: p.keys.clone(),
                clock: p.clock.clone(),
                shared: shared.clone(),
            },
            proxies: Proxies {
                store: p.proxies,
                applications: p.applications.clone(),
                keys: p.keys.clone(),
                cipher: p.cipher.clone(),
                code: p.code.clone(),
                svc: p.svc.clone(),
                forwarder: p.forwarder.clone(),
                clock: p.clock.clone(),
                tenants: p.tenants.clone(),
                tokens: tokens.clone(),
                auth: auth.clone(),
                vault: vault.clone(),
                shared: shared.clone(),
            },
            reactors: Reactors {
                formulas: p.formulas,
                store: p.reactors,
                applications: p.applications,
                code: p.code,
                svc: p.svc,
                forwarder: p.forwarder,
                clock: p.clock.clone(),
                tokens: tokens.clone(),
                vault: vault.clone(),
                shared: shared.clone(),
            },
            audit: AuditLog {
                audit: p.audit,
                audit_buffer,
                tenants: p.tenants.clone(),
                cipher: p.cipher.clone(),
                shared: shared.clone(),
                verifying: Arc::default(),
            },
            usage: Usage {
                store: p.usage.clone(),
                activity,
                clock: p.clock.clone(),
            },
            tenants: Tenants {
                store: p.tenants,
                usage: p.usage,
                keys: p.keys,
                cipher: p.cipher.clone(),
                clock: p.clock.clone(),
                shared: shared.clone(),
            },
            idempotency: Idempotency {
                store: p.idempotency,
                cipher: p.cipher,
                clock: p.clock,
                shared,
            },
            tokens,
            auth,
        }
    }
}

mod activity;
mod applications;
mod areas;
mod audit;
mod authenticate;
mod idempotency;
mod keys;
mod operator;
mod proxies;
mod reactors;
mod sealed_config;
mod sessions;
mod shared;
mod svc;
mod tenants;
mod tokens;
mod usage;

pub use areas::{
    Applications, AuditLog, Authenticator, Idempotency, Proxies, Reactors, Sessions, Tenants,
    Tokens, Usage,
};
/// The default high-water mark of a tenant's audit events in memory (docs/decisions.md §11).
pub use audit::buffer::HIGH_WATER as AUDIT_HIGH_WATER;
pub use authenticate::prefetched::{
    Prefetched, PrefetchedReactor, PrefetchedSearch, PrefetchedToken, ReactorRead, SearchRead,
};
pub use idempotency::{Idempotent, Replay, UNREPLAYABLE};
pub use operator::TenantSummary;
pub use proxies::{ProxyCall, ProxyReply, RawProxy, RawTransform};
pub use reactors::{
    ConsoleLine, DryRunOutcome, DryRunRequest, RawReactor, ReactResult, ReactorView,
};
pub use sessions::StartedSession;
use shared::Shared;
pub use tokens::{TokenView, Tokenized};
pub use usage::UsageReport;

#[cfg(test)]
mod tests;
