//! Application use cases: create, read, list, update, regenerate, delete, expiry — with the
//! granting rule (docs/decisions.md §4).

use uuid::Uuid;

use super::Applications;
use crate::application::{
    ApiKey, Application, ApplicationChanges, NewApplication, RawApplicationUpdate,
    RawNewApplication,
};
use crate::auth::Principal;
use crate::error::Error;
use crate::page::{Page, PageRequest};
use crate::permission::Permission;

impl Applications {
    /// `POST /applications`.
    pub async fn create_application(
        &self,
        caller: &Principal,
        raw: RawNewApplication,
    ) -> Result<(Application, ApiKey), Error> {
        caller.require(Permission::ApplicationCreate)?;
        let now = self.clock.now();
        let new = NewApplication::parse(raw, now)?;
        caller.may_grant(&new.permissions)?;
        let app = Application {
            id: self.clock.new_id(),
            tenant_id: caller.tenant_id,
            name: new.name,
            app_type: new.app_type,
            permissions: new.permissions,
            rules: new.rules,
            created_by: Some(caller.application_id),
            created_at: now,
            modified_by: None,
            modified_at: None,
            expires_at: new.expires_at,
        };
        let key = self.keys.generate();
        let written = self.store.insert(&app, &self.keys.hash(&key)).await;
        self.shared.tenant_write(caller.tenant_id, written).await?;
        tracing::info!(application_id = %app.id, app_type = %app.app_type, "application created");
        self.shared
            .audit(caller, "create", "application", [app.id.to_string()]);
        Ok((app, key))
    }

    /// `GET /applications`.
    pub async fn list_applications(
        &self,
        caller: &Principal,
        ids: &[Uuid],
        page: PageRequest,
    ) -> Result<Page<Application>, Error> {
        caller.require(Permission::ApplicationRead)?;
        if ids.len() > super::tokens::MAX_ID_FILTERS {
            return Err(Error::invalid("id", "at most 100 values"));
        }
        Ok(self.store.list(caller.tenant_id, ids, page).await?)
    }

    /// `GET /applications/{id}`.
    pub async fn get_application(
        &self,
        caller: &Principal,
        id: Uuid,
    ) -> Result<Application, Error> {
        caller.require(Permission::ApplicationRead)?;
        self.find_application(caller, id).await
    }

    /// `GET /applications/key`: the caller's own application.
    pub async fn own_application(&self, caller: &Principal) -> Result<Application, Error> {
        caller.require(Permission::ApplicationRead)?;
        self.find_application(caller, caller.application_id).await
    }

    /// `PUT /applications/{id}`.
    pub async fn update_application(
        &self,
        caller: &Principal,
        id: Uuid,
        raw: RawApplicationUpdate,
    ) -> Result<Application, Error> {
        caller.require(Permission::ApplicationUpdate)?;
        let mut app = self.find_application(caller, id).await?;
        // Only an application no stronger than the caller may be changed.
        caller.may_grant(&app.permissions)?;
        let changes = ApplicationChanges::parse(raw, app.app_type)?;
        caller.may_grant(&changes.permissions)?;
        if app.id == caller.application_id
            && changes
                .permissions
                .iter()
                .any(|p| !app.permissions.contains(p))
        {
            // No application raises its own rights (docs/decisions.md §4).
            return Err(Error::Forbidden);
        }
        app.name = changes.name;
        app.permissions = changes.permissions;
        app.rules = changes.rules;
        app.modified_by = Some(caller.application_id);
        app.modified_at = Some(self.clock.now());
        if !self.store.update(&app).await? {
            return Err(Error::NotFound);
        }
        tracing::info!(application_id = %app.id, "application updated");
        self.shared
            .audit(caller, "update", "application", [app.id.to_string()]);
        Ok(app)
    }

    /// `POST /applications/{id}/regenerate`: a new key; the old one stops working at once.
    pub async fn regenerate_key(
        &self,
        caller: &Principal,
        id: Uuid,
    ) -> Result<(Application, ApiKey), Error> {
        caller.require(Permission::ApplicationUpdate)?;
        let mut app = self.find_application(caller, id).await?;
        // A new key is the application's rights in the caller's hands.
        caller.may_grant(&app.permissions)?;
        app.modified_by = Some(caller.application_id);
        app.modified_at = Some(self.clock.now());
        let key = self.keys.generate();
        if !self.store.replace_key(&app, &self.keys.hash(&key)).await? {
            return Err(Error::NotFound);
        }
        // Sessions begun or authorized with the old key end with it.
        self.sessions
            .delete_for_application(caller.tenant_id, app.id)
            .await?;
        tracing::info!(application_id = %app.id, "application key regenerated");
        self.shared
            .audit(caller, "regenerate", "application", [app.id.to_string()]);
        Ok((app, key))
    }

    /// `DELETE /applications/{id}`.
    pub async fn delete_application(&self, caller: &Principal, id: Uuid) -> Result<(), Error> {
        caller.require(Permission::ApplicationDelete)?;
        // A weaker key cannot remove a stronger application (and lock its owner out).
        let app = self.find_application(caller, id).await?;
        caller.may_grant(&app.permissions)?;
        if self.store.delete(caller.tenant_id, id).await? {
            tracing::info!(application_id = %id, "application deleted");
            self.shared
                .audit(caller, "delete", "application", [id.to_string()]);
            Ok(())
        } else {
            Err(Error::NotFound)
        }
    }

    /// Background job: deletes applications past their `expires_at`.
    pub async fn purge_expired_applications(&self) -> Result<u64, Error> {
        Ok(self.store.delete_expired(self.clock.now()).await?)
    }

    async fn find_application(&self, caller: &Principal, id: Uuid) -> Result<Application, Error> {
        self.store
            .get(caller.tenant_id, id)
            .await?
            .ok_or(Error::NotFound)
    }
}
