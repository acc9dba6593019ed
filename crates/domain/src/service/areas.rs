//! The areas of the vault and the ports each one is given: no area holds a port it does not
//! use. Each area's use cases are in the module of its name (`tokens/`, `applications.rs`, …);
//! what they all use alike is [`Shared`]. An area that calls another holds that area itself
//! (proxies and reactors detokenize through [`Tokens`]), never its ports.

use std::sync::{Arc, Weak};

use super::activity::ActivityBuffer;
use super::audit::buffer::AuditBuffer;
use super::{Areas, Shared};
use crate::ports::code::CodeRunner;
use crate::ports::forward::Forwarder;
use crate::ports::svc::SvcWire;
use crate::ports::{
    ApplicationRepository, AuditRepository, Cipher, Clock, Expressions, FormulaRepository,
    IdempotencyRepository, KeyService, ProxyRepository, ReactorRepository, SessionRepository,
    TenantKeys, TenantRepository, TokenRepository, UsageRepository,
};

/// Tokens: create, read, update, delete, list, tokenize, detokenize, associations.
#[derive(Clone)]
pub struct Tokens {
    /// The area's own store.
    pub(super) store: Arc<dyn TokenRepository>,
    pub(super) cipher: Arc<dyn Cipher>,
    pub(super) expressions: Arc<dyn Expressions>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) shared: Shared,
}

/// Applications and their keys.
#[derive(Clone)]
pub struct Applications {
    /// The area's own store.
    pub(super) store: Arc<dyn ApplicationRepository>,
    /// To end the sessions of a key that is replaced.
    pub(super) sessions: Arc<dyn SessionRepository>,
    pub(super) keys: Arc<dyn KeyService>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) shared: Shared,
}

/// API keys to callers: application keys and session keys.
#[derive(Clone)]
pub struct Authenticator {
    pub(super) applications: Arc<dyn ApplicationRepository>,
    pub(super) sessions: Arc<dyn SessionRepository>,
    pub(super) keys: Arc<dyn KeyService>,
    pub(super) clock: Arc<dyn Clock>,
    /// Only to wait for room in the caller's tenant's audit log (`audit/room.rs`).
    pub(super) audit: Arc<AuditBuffer>,
    /// The tenant of application keys that searched (`authenticate/searching.rs`).
    pub(super) key_tenants: Arc<super::authenticate::key_tenants::KeyTenants>,
}

/// Sessions: started by a public application, authorized by a private one.
#[derive(Clone)]
pub struct Sessions {
    /// The area's own store.
    pub(super) store: Arc<dyn SessionRepository>,
    pub(super) keys: Arc<dyn KeyService>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) shared: Shared,
}

/// Proxies: their management and their invocation.
#[derive(Clone)]
pub struct Proxies {
    /// The area's own store.
    pub(super) store: Arc<dyn ProxyRepository>,
    pub(super) applications: Arc<dyn ApplicationRepository>,
    pub(super) keys: Arc<dyn KeyService>,
    pub(super) cipher: Arc<dyn Cipher>,
    pub(super) code: Arc<dyn CodeRunner>,
    pub(super) svc: Arc<dyn SvcWire>,
    pub(super) forwarder: Arc<dyn Forwarder>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) tenants: Arc<dyn TenantRepository>,
    pub(super) tokens: Tokens,
    pub(super) auth: Authenticator,
    /// The whole vault, for the `req.svc` of a transform acting as an application.
    pub(super) vault: Weak<Areas>,
    pub(super) shared: Shared,
}

/// Reactor formulas, reactors and their invocation.
#[derive(Clone)]
pub struct Reactors {
    pub(super) formulas: Arc<dyn FormulaRepository>,
    /// The area's own store.
    pub(super) store: Arc<dyn ReactorRepository>,
    pub(super) applications: Arc<dyn ApplicationRepository>,
    pub(super) code: Arc<dyn CodeRunner>,
    pub(super) svc: Arc<dyn SvcWire>,
    pub(super) forwarder: Arc<dyn Forwarder>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) tokens: Tokens,
    /// The whole vault, for the `req.svc` of a reactor acting as an application.
    pub(super) vault: Weak<Areas>,
    pub(super) shared: Shared,
}

/// The audit log: its write-behind (a buffer, the [`crate::ports::AuditTrail`] every
/// area records into), the flush to each tenant's hash chain, reading and verifying it.
#[derive(Clone)]
pub struct AuditLog {
    pub(super) audit: Arc<dyn AuditRepository>,
    pub(super) audit_buffer: Arc<AuditBuffer>,
    pub(super) tenants: Arc<dyn TenantKeys>,
    pub(super) cipher: Arc<dyn Cipher>,
    pub(super) shared: Shared,
    /// The tenants whose chain `GET /logs/verify` is walking: one walk per tenant at a time.
    pub(super) verifying: Arc<std::sync::Mutex<std::collections::HashSet<uuid::Uuid>>>,
}

/// Monthly activity (the [`crate::ports::ActivityTrail`] every area records into) and the
/// usage report.
#[derive(Clone)]
pub struct Usage {
    /// The area's own store.
    pub(super) store: Arc<dyn UsageRepository>,
    pub(super) activity: Arc<ActivityBuffer>,
    pub(super) clock: Arc<dyn Clock>,
}

/// The caller's own tenant, provisioning, and the operator's tenant and key commands.
#[derive(Clone)]
pub struct Tenants {
    /// The area's own store.
    pub(super) store: Arc<dyn TenantRepository>,
    pub(super) usage: Arc<dyn UsageRepository>,
    pub(super) keys: Arc<dyn KeyService>,
    pub(super) cipher: Arc<dyn Cipher>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) shared: Shared,
}

/// Idempotent requests (`Idempotency-Key`).
#[derive(Clone)]
pub struct Idempotency {
    /// The area's own store.
    pub(super) store: Arc<dyn IdempotencyRepository>,
    pub(super) cipher: Arc<dyn Cipher>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) shared: Shared,
}
