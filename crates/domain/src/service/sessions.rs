//! Sessions (docs/decisions.md §4, sessions): `POST /sessions` and `POST /sessions/authorize`,
//! and the expiry sweep.

use std::sync::Arc;

use super::Sessions;
use crate::application::ApiKey;
use crate::auth::{Principal, SessionCeiling};
use crate::error::Error;
use crate::permission::ApplicationType;
use crate::ports::AuthorizedSession;
use crate::session::{DEFAULT_LIFETIME, Nonce, RawSessionGrant, Session, SessionGrant};

/// A session just started: its key and nonce are shown once.
#[derive(Debug)]
pub struct StartedSession {
    /// The session.
    pub session: Session,
    /// Its key (refused until authorized).
    pub key: ApiKey,
    /// What its authorizer sends.
    pub nonce: Nonce,
}

impl Sessions {
    /// `POST /sessions`: a public application's key starts a session, unauthorized, that lives
    /// [`DEFAULT_LIFETIME`] unless its authorization says otherwise.
    pub async fn create_session(&self, caller: &Principal) -> Result<StartedSession, Error> {
        caller.require_application()?;
        if caller.app_type != ApplicationType::Public {
            return Err(Error::Forbidden);
        }
        let now = self.clock.now();
        let session = Session {
            id: self.clock.new_id(),
            tenant_id: caller.tenant_id,
            created_by: caller.application_id,
            authorized_by: None,
            permissions: Vec::new(),
            rules: Vec::new(),
            created_at: now,
            expires_at: now + DEFAULT_LIFETIME,
        };
        let key = self.keys.generate();
        let nonce = self.keys.generate_nonce();
        let written = self
            .store
            .insert(
                &session,
                &self.keys.hash(&key),
                &self.keys.hash_nonce(&nonce),
            )
            .await;
        self.shared.tenant_write(caller.tenant_id, written).await?;
        tracing::info!(session_id = %session.id, "session started");
        self.shared
            .audit(caller, "create", "session", [session.id.to_string()]);
        Ok(StartedSession {
            session,
            key,
            nonce,
        })
    }

    /// `POST /sessions/authorize`: a private application grants a session token permissions it
    /// holds itself (403 for any it does not); the nonce works once (400 otherwise).
    pub async fn authorize_session(
        &self,
        caller: &Principal,
        raw: RawSessionGrant,
    ) -> Result<(), Error> {
        caller.require_application()?;
        if caller.app_type != ApplicationType::Private {
            return Err(Error::Forbidden);
        }
        let now = self.clock.now();
        let (nonce, grant) = SessionGrant::parse(raw, now).map_err(Error::Validation)?;
        if !grant.named_permissions().all(|p| caller.holds(p)) {
            return Err(Error::Forbidden);
        }
        let session_id = self
            .store
            .authorize(
                caller.tenant_id,
                &self.keys.hash_nonce(&nonce),
                caller.application_id,
                &grant,
                now,
            )
            .await?;
        let Some(session_id) = session_id else {
            return Err(Error::invalid(
                "nonce",
                "does not belong to a session waiting for authorization",
            ));
        };
        tracing::info!(authorized_by = %caller.application_id, "session authorized");
        self.shared
            .audit(caller, "authorize", "session", [session_id.to_string()]);
        Ok(())
    }

    /// Background job: deletes sessions past their `expires_at`.
    pub async fn purge_expired_sessions(&self) -> Result<u64, Error> {
        Ok(self.store.delete_expired(self.clock.now()).await?)
    }
}

/// The caller a live session's key acts as: its own grants, capped by its authorizer's.
pub(super) fn session_principal(found: AuthorizedSession) -> Principal {
    let AuthorizedSession {
        session,
        authorizer,
        settings,
    } = found;
    Principal {
        application_id: session.id,
        tenant_id: session.tenant_id,
        app_type: ApplicationType::Private,
        permissions: session.permissions,
        rules: session.rules,
        settings,
        session: Some(Arc::new(SessionCeiling {
            authorized_by: authorizer.id,
            permissions: authorizer.permissions,
            rules: authorizer.rules,
        })),
        trace_id: None,
    }
}
