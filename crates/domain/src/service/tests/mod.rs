//! Use-case tests: mockall mocks of the ports whose calls a test asserts (tenant keys,
//! applications, tokens, usage, cipher, expressions, code, API keys, sessions), and small
//! stand-ins for the others (`NoSvc`, `NoFormulas`, `NoReactors`, `NoProxies`,
//! `NoIdempotency`, `NoAudit` keeping the log in memory, `NoForwarder`, `FixedClock`). The
//! helpers are in `mocks`, `fakes` and `fixtures`, gathered here with the imports the tests
//! share; the tests are in one file or folder per use-case area.

use std::sync::Arc;

use async_trait::async_trait;
use mockall::mock;
use mockall::predicate::eq;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{Ports, Vault};
use crate::application::{ApiKey, Application, KeyHash, RawApplicationUpdate, RawNewApplication};
use crate::area_error::TokenError;
use crate::audit::{AppendOutcome, AuditEntry, AuditFilter, AuditHead};
use crate::auth::Principal;
use crate::error::{Error, RepoError};
use crate::formula::Formula;
use crate::page::{Page, PageRequest};
use crate::permission::{ApplicationType, Permission};
use crate::ports::code::{CodeCall, CodeError, CodeRunner};
use crate::ports::forward::{ForwardError, Forwarder, OutboundRequest, OutboundResponse};
use crate::ports::svc::{SvcAnswer, SvcCall, SvcWire};
use crate::ports::{
    AlsoRead, ApplicationRepository, AuditRepository, AuthorizedSession, Beside, Cipher,
    CipherError, Claim, Clock, Expressions, FormulaDelete, FormulaRepository, IdempotencyKey,
    IdempotencyRepository, KeyRead, KeyService, ProxyRepository, ReactorRepository, RenderError,
    SearchCondition, SessionRepository, StoredProxy, TenantKeys, TenantRepository, TokenFilter,
    TokenRepository, TokenWrite, TypeCount, UsageRepository, Visibility,
};
use crate::proxy::ProxyKey;
use crate::reactor::Reactor;
use crate::session::{Nonce, Session, SessionGrant};
use crate::tenant::{RawTenantUpdate, Tenant, TenantSettings};
use crate::token::StoredToken;

mod fakes;
mod fixtures;
mod mocks;

use fakes::*;
use fixtures::*;
use mocks::*;

mod applications;
mod audit;
mod idempotency;
mod proxies;
mod reactors;
mod search;
mod sessions;
mod svc;
mod tenants;
mod tokens;
mod usage;
