//! What every area uses alike: the clock, the tenants' data keys (loaded on first use), and the
//! write-behind trails of the audit log and of monthly activity. Each area holds a [`Shared`]
//! beside its own narrow set of ports.

use std::sync::Arc;

use time::{OffsetDateTime, UtcOffset};
use uuid::Uuid;

use crate::audit::{ActorType, AuditEvent};
use crate::auth::Principal;
use crate::error::{Error, RepoError};
use crate::ports::{ActivityTrail, AuditTrail, Cipher, Clock, TenantKeys, month_of};

/// The clock, the data keys and the two trails.
#[derive(Clone)]
pub(crate) struct Shared {
    pub(super) clock: Arc<dyn Clock>,
    /// Read only to load a tenant's data key.
    pub(super) tenants: Arc<dyn TenantKeys>,
    pub(super) cipher: Arc<dyn Cipher>,
    pub(super) audit_trail: Arc<dyn AuditTrail>,
    pub(super) activity_trail: Arc<dyn ActivityTrail>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

impl Shared {
    /// Loads tenant `tenant_id`'s data key into the cipher unless it is there already.
    /// `Unauthenticated` when the tenant was deleted since its caller was authenticated.
    pub(in crate::service) async fn ensure_key(&self, tenant_id: Uuid) -> Result<(), Error> {
        if self.cipher.has_tenant_key(tenant_id) {
            return Ok(());
        }
        let wrapped = if let Some(w) = self.tenants.data_key(tenant_id).await? {
            w
        } else if !self.tenants.is_live(tenant_id).await? {
            // Deleted since the caller was authenticated: it gets no key, old or new.
            return Err(Error::Unauthenticated);
        } else {
            // A tenant made before data keys existed gets one now (first writer wins).
            let fresh = self
                .cipher
                .new_tenant_key(tenant_id)
                .await
                .map_err(|e| Error::internal_from("cannot make the tenant key", e))?;
            self.tenants
                .replace_data_key(tenant_id, &[], &fresh)
                .await?;
            self.tenants
                .data_key(tenant_id)
                .await?
                .ok_or(Error::NotFound)?
        };
        self.cipher
            .load_tenant_key(tenant_id, &wrapped)
            .await
            .map_err(|e| Error::internal_from("cannot unwrap the tenant key", e))
    }

    /// The outcome of a create of tenant `tenant_id`: a failed foreign key when the tenant is
    /// gone (deleted, and purged, after its caller's key was checked) is `Unauthenticated`, as
    /// a token create answers it and as the key now is; any other failure is as it came.
    pub(in crate::service) async fn tenant_write<T>(
        &self,
        tenant_id: Uuid,
        written: Result<T, RepoError>,
    ) -> Result<T, Error> {
        match written {
            Err(RepoError::Gone(what)) if !self.tenants.is_live(tenant_id).await? => {
                tracing::info!(%tenant_id, gone = %what, "a create met its tenant's deletion");
                Err(Error::Unauthenticated)
            }
            other => Ok(other?),
        }
    }

    /// Records that `caller` did `operation` to each of `ids` (of kind `entity_type`).
    pub(in crate::service) fn audit<I, S>(
        &self,
        caller: &Principal,
        operation: &'static str,
        entity_type: &'static str,
        ids: I,
    ) where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let actor_type = if caller.session.is_some() {
            ActorType::Session
        } else {
            ActorType::Application
        };
        self.record(
            caller.tenant_id,
            actor_type,
            Some(caller.application_id),
            caller.trace_id.clone(),
            operation,
            entity_type,
            ids,
        );
    }

    /// Records what happened without an API key: the server itself (`System`: command line,
    /// bootstrap) or a caller without one (`Anonymous`: a proxy that needs no key).
    pub(in crate::service) fn audit_unkeyed(
        &self,
        tenant_id: Uuid,
        actor_type: ActorType,
        operation: &'static str,
        entity_type: &'static str,
        id: impl Into<String>,
    ) {
        self.record(
            tenant_id,
            actor_type,
            None,
            None,
            operation,
            entity_type,
            [id],
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn record<I, S>(
        &self,
        tenant_id: Uuid,
        actor_type: ActorType,
        actor_id: Option<Uuid>,
        trace_id: Option<String>,
        operation: &'static str,
        entity_type: &'static str,
        ids: I,
    ) where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let now = self.clock.now();
        let events: Vec<AuditEvent> = ids
            .into_iter()
            .map(|id| AuditEvent {
                id: self.clock.new_id(),
                tenant_id,
                actor_type,
                actor_id,
                operation,
                entity_type,
                entity_id: id.into(),
                trace_id: trace_id.clone(),
                created_at: now,
            })
            .collect();
        self.audit_trail.record(tenant_id, events);
    }

    /// Notes that tokens of `tenant_id`, given as (id, creation time), were used now (the
    /// monthly active count). A token created this UTC month is left out: the store counts it
    /// from its creation (`UsageRepository::count_active`), so an activity row for it would
    /// count it twice, and tokenizing writes no activity row at all.
    pub(in crate::service) fn record_active<'a>(
        &self,
        tenant_id: Uuid,
        tokens: impl IntoIterator<Item = (&'a str, OffsetDateTime)>,
    ) {
        let now = self.clock.now();
        let month = month_of(now);
        let mut older = tokens
            .into_iter()
            .filter(|(_, created)| !same_month(*created, now))
            .map(|(id, _)| id)
            .peekable();
        if older.peek().is_some() {
            self.activity_trail.record(tenant_id, &month, &mut older);
        }
    }
}

/// Whether `a` and `b` fall in the same UTC calendar month.
fn same_month(a: OffsetDateTime, b: OffsetDateTime) -> bool {
    let (a, b) = (a.to_offset(UtcOffset::UTC), b.to_offset(UtcOffset::UTC));
    (a.year(), a.month()) == (b.year(), b.month())
}
