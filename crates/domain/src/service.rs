//! The use cases (driving port): every operation the inbound adapters may call. [`Vault`] is
//! the façade; each use case lives in its own module below (`applications`, `tenants`,
//! `tokens/*`, `usage`, `keys`).

use std::sync::Arc;

use crate::application::{ApiKey, Application};
use crate::auth::Principal;
use crate::code::{CodeRunner, Svc};
use crate::forward::Forwarder;
use crate::ports::{
    ApplicationRepository, AuditRepository, Cipher, Clock, Expressions, FormulaRepository,
    IdempotencyRepository, KeyService, ProxyRepository, ReactorRepository, SessionRepository,
    TenantRepository, TokenRepository,
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
    /// Makes `req.svc` for code acting as an application.
    pub svc: Arc<dyn SvcFactory>,
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

/// The vault's use cases. Each checks the caller's permission, validates, and confines every
/// read and write to the caller's tenant.
#[derive(Clone)]
pub struct Vault {
    ports: Ports,
    activity: Arc<usage::ActivityBuffer>,
    audit_buffer: Arc<audit::AuditBuffer>,
}

impl Vault {
    /// Builds the use cases over the given ports.
    pub fn new(ports: Ports) -> Self {
        Self {
            ports,
            activity: Arc::default(),
            audit_buffer: Arc::default(),
        }
    }
}

mod applications;
mod audit;
mod authenticate;
mod idempotency;
mod keys;
mod operator;
mod proxies;
mod reactors;
mod sealed_config;
mod sessions;
mod tenants;
mod tokens;
mod usage;

pub use authenticate::{Prefetched, PrefetchedReactor, PrefetchedToken};
pub use idempotency::{Idempotent, StoredResponse};
pub use operator::TenantSummary;
pub use proxies::{ProxyCall, ProxyReply, RawProxy, RawTransform};
pub use reactors::{RawReactor, ReactResult, ReactorView};
pub use sessions::StartedSession;
pub use tokens::{TokenView, Tokenized};
pub use usage::UsageReport;

#[cfg(test)]
mod tests;

/// Makes the `svc` of an application. The inbound adapter implements it, as it owns the JSON
/// the API speaks.
pub trait SvcFactory: Send + Sync {
    /// A `svc` acting as `principal` through `vault`.
    fn for_application(&self, vault: Vault, principal: Principal) -> Arc<dyn Svc>;
}
