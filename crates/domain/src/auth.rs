//! The authenticated caller and its permission checks.

use uuid::Uuid;

use crate::access::AccessRule;
use crate::error::Error;
use crate::permission::{ApplicationType, Permission};
use crate::tenant::TenantSettings;

/// Who is calling: the application behind a valid, unexpired API key.
#[derive(Clone, Debug)]
pub struct Principal {
    /// The application.
    pub application_id: Uuid,
    /// Its tenant: every use case is confined to it.
    pub tenant_id: Uuid,
    /// Its type.
    pub app_type: ApplicationType,
    /// Its plain permissions.
    pub permissions: Vec<Permission>,
    /// Its rules, by priority.
    pub rules: Vec<AccessRule>,
    /// Its tenant's settings, read with the key.
    pub settings: TenantSettings,
}

impl Principal {
    /// Whether the caller holds `permission` plainly or through any rule.
    pub fn holds(&self, permission: Permission) -> bool {
        self.permissions.contains(&permission)
            || self
                .rules
                .iter()
                .any(|r| r.permissions.contains(&permission))
    }

    /// `Ok` when the caller may give an application these permissions — or act on an application
    /// holding them (update, regenerate its key, delete): a management permission only when the
    /// caller holds it itself (docs/decisions.md §4, granting); token permissions and rules are
    /// given by any holder of `application:create`/`application:update`. 403 otherwise.
    pub fn may_grant(&self, permissions: &[Permission]) -> Result<(), Error> {
        let management = permissions
            .iter()
            .filter(|p| p.allowed_for(ApplicationType::Management));
        for p in management {
            if !self.permissions.contains(p) {
                return Err(Error::Forbidden);
            }
        }
        Ok(())
    }

    /// The caller that acts as `app` in a tenant with `settings` (authentication, and code or
    /// proxies acting as their application).
    pub fn of_application(app: crate::application::Application, settings: TenantSettings) -> Self {
        Self {
            application_id: app.id,
            tenant_id: app.tenant_id,
            app_type: app.app_type,
            permissions: app.permissions,
            rules: app.rules,
            settings,
        }
    }

    /// Whether the caller may attach an application to a proxy or reactor, lending that
    /// application's token rights to whoever invokes it: only those who may grant token
    /// permissions (docs/decisions.md §4: holders of `application:create` or
    /// `application:update`) may.
    pub fn may_lend_applications(&self) -> bool {
        self.holds(Permission::ApplicationCreate) || self.holds(Permission::ApplicationUpdate)
    }

    /// `Ok` when the caller holds `permission`, 403 otherwise.
    pub fn require(&self, permission: Permission) -> Result<(), Error> {
        if self.holds(permission) {
            Ok(())
        } else {
            Err(Error::Forbidden)
        }
    }
}

impl Principal {
    /// The transform under which the caller may do `permission` on a token in `container`
    /// (docs/decisions.md §4), or `None` when no rule or plain permission grants it.
    pub fn access(
        &self,
        container: &crate::container::Container,
        permission: Permission,
    ) -> Option<crate::access::Transform> {
        crate::access::evaluate(&self.rules, &self.permissions, container, permission)
    }

    /// `Ok(transform)` when granted, 403 otherwise.
    pub fn require_on(
        &self,
        container: &crate::container::Container,
        permission: Permission,
    ) -> Result<crate::access::Transform, Error> {
        self.access(container, permission).ok_or(Error::Forbidden)
    }

    /// Which containers the caller may exercise `permission` on, for filtering in a query.
    pub fn visibility(&self, permission: Permission) -> crate::ports::Visibility {
        if self.permissions.contains(&permission) {
            return crate::ports::Visibility::All;
        }
        let prefixes = self
            .rules
            .iter()
            .filter(|r| r.permissions.contains(&permission))
            .map(|r| r.container.as_str().to_string())
            .collect::<Vec<_>>();
        if prefixes.iter().any(|p| p == "/") {
            crate::ports::Visibility::All
        } else {
            crate::ports::Visibility::Prefixes(prefixes)
        }
    }
}
