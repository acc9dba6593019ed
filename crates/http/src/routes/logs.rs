//! `GET /logs`: the tenant's audit log (docs/decisions.md §11).

use actix_web::{HttpResponse, web};
use serde::Serialize;
use tokenvault_domain::Vault;
use tokenvault_domain::audit::{AuditEntry, AuditFilter};
use utoipa::ToSchema;

use crate::dto::{Paginated, format_time, parse_time};
use crate::extract::Caller;
use crate::problem::{ApiError, Problem};
use crate::query::QueryParams;

type Result<T> = std::result::Result<T, ApiError>;

/// One audit log entry: who did what to which resource — never the data or a key.
#[derive(Debug, Serialize, ToSchema)]
pub struct LogEntryResponse {
    /// Identifier.
    pub id: String,
    /// The tenant.
    pub tenant_id: String,
    /// `application`, `session`, `system` (command line) or `anonymous` (a proxy without
    /// authentication).
    pub actor_type: String,
    /// The acting application or session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor_id: Option<String>,
    /// `create`, `update`, `delete`, `regenerate`, `read`, `use`, `invoke`, `authorize`,
    /// `associate`, `dissociate`, `dry_run` (of code, entity `formula` id `*`) or `search` (of
    /// the token collection, entity id `*`).
    pub operation: String,
    /// `application`, `tenant`, `token`, `proxy`, `reactor`, `formula` or `session`.
    pub entity_type: String,
    /// The resource's id.
    pub entity_id: String,
    /// The request's `SVC-TRACE-ID`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// When (RFC 3339 UTC).
    pub created_at: String,
    /// Position in the tenant's hash chain (1, 2, 3, …).
    pub sequence: i64,
}

impl From<AuditEntry> for LogEntryResponse {
    fn from(e: AuditEntry) -> Self {
        let event = e.event;
        Self {
            id: event.id.to_string(),
            tenant_id: event.tenant_id.to_string(),
            actor_type: event.actor_type,
            actor_id: event.actor_id.map(|a| a.to_string()),
            operation: event.operation,
            entity_type: event.entity_type,
            entity_id: event.entity_id,
            trace_id: event.trace_id,
            created_at: format_time(event.created_at),
            sequence: e.seq,
        }
    }
}

/// Read the audit log, newest first.
#[utoipa::path(get, path = "/logs", tag = "logs",
    params(("entity_type" = Option<String>, Query), ("entity_id" = Option<String>, Query),
           ("start_date" = Option<String>, Query, description = "RFC 3339, inclusive"),
           ("end_date" = Option<String>, Query, description = "RFC 3339, inclusive"),
           ("page" = Option<u64>, Query), ("size" = Option<u64>, Query)),
    responses((status = 200, body = Paginated<LogEntryResponse>), (status = 400, body = Problem),
              (status = 401, body = Problem), (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn list(
    vault: web::Data<Vault>,
    Caller(caller): Caller,
    query: QueryParams,
) -> Result<HttpResponse> {
    let page = query.page()?;
    let text = |name| {
        query
            .first(name)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let date = |name| {
        query
            .first(name)
            .map(|raw| parse_time(name, raw))
            .transpose()
    };
    let filter = AuditFilter {
        entity_type: text("entity_type"),
        entity_id: text("entity_id"),
        start: date("start_date")?,
        end: date("end_date")?,
    };
    let page = vault.audit.audit_log(&caller, filter, page).await?;
    Ok(HttpResponse::Ok().json(Paginated::from_page(page, LogEntryResponse::from)))
}

/// A kind of resource the audit log records.
#[derive(Debug, Serialize, ToSchema)]
pub struct EntityTypeResponse {
    /// A name for people (`Reactor Formula`).
    pub display_name: &'static str,
    /// The `entity_type` of its entries (`formula`), as `GET /logs` filters by it.
    pub value: &'static str,
}

/// The kinds of resource the audit log records.
#[utoipa::path(get, path = "/logs/entity-types", tag = "logs",
    responses((status = 200, body = Vec<EntityTypeResponse>), (status = 401, body = Problem),
              (status = 403, body = Problem)),
    security(("api_key" = [])))]
pub async fn entity_types(vault: web::Data<Vault>, Caller(caller): Caller) -> Result<HttpResponse> {
    let types = vault.audit.entity_types(&caller)?;
    let body: Vec<EntityTypeResponse> = types
        .iter()
        .map(|(value, display_name)| EntityTypeResponse {
            display_name,
            value,
        })
        .collect();
    Ok(HttpResponse::Ok().json(body))
}

/// Where a chain stops holding.
#[derive(Debug, Serialize, ToSchema)]
pub struct BrokenAt {
    /// The first sequence number at which the chain does not hold.
    pub sequence: i64,
    /// The entry found there, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry_id: Option<String>,
    /// What is wrong.
    pub reason: String,
}

/// The caller's tenant's audit chain, walked: as `tokenvault audit verify --tenant` reports it.
#[derive(Debug, Serialize, ToSchema)]
pub struct VerificationResponse {
    /// The tenant.
    pub tenant_id: String,
    /// Whether the whole chain holds.
    pub ok: bool,
    /// Entries checked.
    pub entries: u64,
    /// The sequence number of the chain's head as the walk ended on it (its hash stays with
    /// the operator's `tokenvault audit verify`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_sequence: Option<i64>,
    /// The first entry at which the chain does not hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_broken: Option<BrokenAt>,
}

/// Verify the tenant's audit log: walks its hash chain (`log:read`); one walk per tenant at a
/// time (503 while one runs).
#[utoipa::path(get, path = "/logs/verify", tag = "logs",
    responses((status = 200, body = VerificationResponse), (status = 401, body = Problem),
              (status = 403, body = Problem), (status = 503, body = Problem)),
    security(("api_key" = [])))]
pub async fn verify(vault: web::Data<Vault>, Caller(caller): Caller) -> Result<HttpResponse> {
    let v = vault.audit.verify_own_audit(&caller).await?;
    Ok(HttpResponse::Ok().json(VerificationResponse {
        tenant_id: v.tenant_id.to_string(),
        ok: v.broken.is_none(),
        entries: v.entries,
        head_sequence: v.head.map(|h| h.seq),
        first_broken: v.broken.map(|b| BrokenAt {
            sequence: b.seq,
            entry_id: b.entry_id.map(|id| id.to_string()),
            reason: b.reason,
        }),
    }))
}

/// Registers the routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(resource!("/logs").route(web::get().to(list)))
        .service(resource!("/logs/entity-types").route(web::get().to(entity_types)))
        .service(resource!("/logs/verify").route(web::get().to(verify)));
}
