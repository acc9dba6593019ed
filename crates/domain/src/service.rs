//! The use cases (driving port): every operation the inbound adapters may call.

use std::sync::Arc;

use uuid::Uuid;

use crate::application::{
    ApiKey, Application, ApplicationChanges, NewApplication, RawApplicationUpdate,
    RawNewApplication,
};
use crate::auth::Principal;
use crate::error::Error;
use crate::page::{Page, PageRequest};
use crate::permission::{ApplicationType, Permission};
use crate::ports::{
    ApplicationRepository, Cipher, Clock, Expressions, KeyService, TenantRepository,
    TokenRepository,
};
use crate::tenant::{RawTenantUpdate, Tenant, TenantChanges, TenantSettings};

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
    activity: Arc<tokens::ActivityBuffer>,
}

impl Vault {
    /// Builds the use cases over the given ports.
    pub fn new(ports: Ports) -> Self {
        Self {
            ports,
            activity: Arc::default(),
        }
    }

    // ---- authentication -------------------------------------------------------------------

    /// Resolves an API key to its application. Missing, malformed, unknown and expired keys are
    /// all `Unauthenticated`.
    pub async fn authenticate(&self, key: Option<&str>) -> Result<Principal, Error> {
        let key = key.and_then(ApiKey::parse).ok_or(Error::Unauthenticated)?;
        let hash = self.ports.keys.hash(&key);
        let (app, settings) = self
            .ports
            .applications
            .find_by_key_hash(&hash)
            .await?
            .ok_or(Error::Unauthenticated)?;
        if app.is_expired(self.ports.clock.now()) {
            return Err(Error::Unauthenticated);
        }
        Ok(Principal {
            application_id: app.id,
            tenant_id: app.tenant_id,
            app_type: app.app_type,
            permissions: app.permissions,
            rules: app.rules,
            settings,
        })
    }

    // ---- applications ---------------------------------------------------------------------

    /// `POST /applications`.
    pub async fn create_application(
        &self,
        caller: &Principal,
        raw: RawNewApplication,
    ) -> Result<(Application, ApiKey), Error> {
        caller.require(Permission::ApplicationCreate)?;
        let now = self.ports.clock.now();
        let new = NewApplication::parse(raw, now)?;
        caller.may_grant(&new.permissions)?;
        let app = Application {
            id: self.ports.clock.new_id(),
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
        let key = self.ports.keys.generate();
        self.ports
            .applications
            .insert(&app, &self.ports.keys.hash(&key))
            .await?;
        tracing::info!(application_id = %app.id, app_type = %app.app_type, "application created");
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
        if ids.len() > tokens::MAX_ID_FILTERS {
            return Err(Error::invalid("id", "at most 100 values"));
        }
        Ok(self
            .ports
            .applications
            .list(caller.tenant_id, ids, page)
            .await?)
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
        app.modified_at = Some(self.ports.clock.now());
        if !self.ports.applications.update(&app).await? {
            return Err(Error::NotFound);
        }
        tracing::info!(application_id = %app.id, "application updated");
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
        app.modified_by = Some(caller.application_id);
        app.modified_at = Some(self.ports.clock.now());
        let key = self.ports.keys.generate();
        if !self
            .ports
            .applications
            .replace_key(&app, &self.ports.keys.hash(&key))
            .await?
        {
            return Err(Error::NotFound);
        }
        tracing::info!(application_id = %app.id, "application key regenerated");
        Ok((app, key))
    }

    /// `DELETE /applications/{id}`.
    pub async fn delete_application(&self, caller: &Principal, id: Uuid) -> Result<(), Error> {
        caller.require(Permission::ApplicationDelete)?;
        if self.ports.applications.delete(caller.tenant_id, id).await? {
            tracing::info!(application_id = %id, "application deleted");
            Ok(())
        } else {
            Err(Error::NotFound)
        }
    }

    /// Background job: deletes applications past their `expires_at`.
    pub async fn purge_expired_applications(&self) -> Result<u64, Error> {
        Ok(self
            .ports
            .applications
            .delete_expired(self.ports.clock.now())
            .await?)
    }

    async fn find_application(&self, caller: &Principal, id: Uuid) -> Result<Application, Error> {
        self.ports
            .applications
            .get(caller.tenant_id, id)
            .await?
            .ok_or(Error::NotFound)
    }

    // ---- tenants --------------------------------------------------------------------------

    /// `GET /tenants/self`.
    pub async fn get_tenant(&self, caller: &Principal) -> Result<Tenant, Error> {
        caller.require(Permission::TenantRead)?;
        self.own_tenant(caller).await
    }

    /// `PUT /tenants/self`.
    pub async fn update_tenant(
        &self,
        caller: &Principal,
        raw: RawTenantUpdate,
    ) -> Result<Tenant, Error> {
        caller.require(Permission::TenantUpdate)?;
        let changes = TenantChanges::parse(raw)?;
        let mut tenant = self.own_tenant(caller).await?;
        changes.apply(&mut tenant);
        tenant.modified_by = Some(caller.application_id);
        tenant.modified_at = Some(self.ports.clock.now());
        if !self.ports.tenants.update(&tenant).await? {
            return Err(Error::NotFound);
        }
        Ok(tenant)
    }

    /// `DELETE /tenants/self`: the tenant and everything it owns; its keys stop working.
    pub async fn delete_tenant(&self, caller: &Principal) -> Result<(), Error> {
        caller.require(Permission::TenantDelete)?;
        if self.ports.tenants.delete(caller.tenant_id).await? {
            self.ports.cipher.forget_tenant_key(caller.tenant_id);
            tracing::info!(tenant_id = %caller.tenant_id, "tenant deleted");
            Ok(())
        } else {
            Err(Error::NotFound)
        }
    }

    async fn own_tenant(&self, caller: &Principal) -> Result<Tenant, Error> {
        self.ports
            .tenants
            .get(caller.tenant_id)
            .await?
            .ok_or(Error::NotFound)
    }

    // ---- provisioning (CLI and first start) -------------------------------------------------

    /// Creates a tenant with a management application holding every management permission.
    /// `key` fixes that application's key (bootstrap); otherwise one is generated.
    pub async fn provision_tenant(
        &self,
        name: &str,
        owner_id: Option<Uuid>,
        key: Option<ApiKey>,
    ) -> Result<ProvisionedTenant, Error> {
        let mut errors = crate::ValidationErrors::new();
        let name = crate::application::parse_name(Some(name.to_string()), &mut errors);
        let name = errors.into_result(name)?.unwrap_or_default();
        let now = self.ports.clock.now();
        let tenant = Tenant {
            id: self.ports.clock.new_id(),
            owner_id: owner_id.unwrap_or_else(|| self.ports.clock.new_id()),
            name,
            settings: TenantSettings::default(),
            created_by: None,
            created_at: now,
            modified_by: None,
            modified_at: None,
        };
        let application = Application {
            id: self.ports.clock.new_id(),
            tenant_id: tenant.id,
            name: format!(
                "{} management",
                tenant.name.chars().take(180).collect::<String>()
            ),
            app_type: ApplicationType::Management,
            permissions: Permission::management(),
            rules: Vec::new(),
            created_by: None,
            created_at: now,
            modified_by: None,
            modified_at: None,
            expires_at: None,
        };
        let key = key.unwrap_or_else(|| self.ports.keys.generate());
        let data_key = self.ports.cipher.new_tenant_key(tenant.id);
        self.ports
            .tenants
            .create_with_application(
                &tenant,
                &data_key,
                &application,
                &self.ports.keys.hash(&key),
            )
            .await?;
        tracing::info!(tenant_id = %tenant.id, "tenant provisioned");
        Ok(ProvisionedTenant {
            tenant,
            application,
            key,
        })
    }

    /// First start: with no tenant at all, creates tenant "Default" and its management
    /// application. Returns `None` when the database already had a tenant.
    pub async fn bootstrap(&self, key: Option<ApiKey>) -> Result<Option<ProvisionedTenant>, Error> {
        if self.ports.tenants.any().await? {
            return Ok(None);
        }
        self.provision_tenant("Default", None, key).await.map(Some)
    }
}

mod keys;
mod tokens;

pub use tokens::{TokenView, Tokenized};

#[cfg(test)]
mod tests;
