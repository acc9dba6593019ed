//! Tenant use cases (the caller's own tenant) and provisioning (bootstrap, CLI).

use crate::audit::ActorType;
use uuid::Uuid;

use super::{ProvisionedTenant, Tenants};
use crate::application::{ApiKey, Application};
use crate::auth::Principal;
use crate::error::Error;
use crate::permission::{ApplicationType, Permission};
use crate::tenant::{RawTenantUpdate, Tenant, TenantChanges, TenantSettings};

impl Tenants {
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
        tenant.modified_at = Some(self.clock.now());
        if !self.store.update(&tenant).await? {
            return Err(Error::NotFound);
        }
        self.shared
            .audit(caller, "update", "tenant", [tenant.id.to_string()]);
        Ok(tenant)
    }

    /// `DELETE /tenants/self`: the tenant and everything it owns; its keys stop working at once,
    /// its rows are purged in the background ([`Self::purge_deleted_tenants`]).
    pub async fn delete_tenant(&self, caller: &Principal) -> Result<(), Error> {
        caller.require(Permission::TenantDelete)?;
        self.retire_tenant(caller.tenant_id).await?;
        tracing::info!(tenant_id = %caller.tenant_id, "tenant deleted");
        Ok(())
    }

    async fn own_tenant(&self, caller: &Principal) -> Result<Tenant, Error> {
        self.store
            .get(caller.tenant_id)
            .await?
            .ok_or(Error::NotFound)
    }

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
        let now = self.clock.now();
        let tenant = Tenant {
            id: self.clock.new_id(),
            owner_id: owner_id.unwrap_or_else(|| self.clock.new_id()),
            name,
            settings: TenantSettings::default(),
            created_by: None,
            created_at: now,
            modified_by: None,
            modified_at: None,
        };
        let application = Application {
            id: self.clock.new_id(),
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
        let key = key.unwrap_or_else(|| self.keys.generate());
        let data_key = self
            .cipher
            .new_tenant_key(tenant.id)
            .await
            .map_err(|e| Error::internal_from("cannot make the tenant key", e))?;
        self.store
            .create_with_application(&tenant, &data_key, &application, &self.keys.hash(&key))
            .await?;
        tracing::info!(tenant_id = %tenant.id, "tenant provisioned");
        self.shared.audit_unkeyed(
            tenant.id,
            ActorType::System,
            "create",
            "tenant",
            tenant.id.to_string(),
        );
        self.shared.audit_unkeyed(
            tenant.id,
            ActorType::System,
            "create",
            "application",
            application.id.to_string(),
        );
        Ok(ProvisionedTenant {
            tenant,
            application,
            key,
        })
    }

    /// First start: with no tenant at all, creates tenant "Default" and its management
    /// application. Returns `None` when the database already had a tenant.
    pub async fn bootstrap(&self, key: Option<ApiKey>) -> Result<Option<ProvisionedTenant>, Error> {
        if self.store.any().await? {
            return Ok(None);
        }
        self.provision_tenant("Default", None, key).await.map(Some)
    }
}
