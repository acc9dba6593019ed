//! The authenticated caller and its permission checks.

use uuid::Uuid;

use crate::access::AccessRule;
use crate::error::Error;
use crate::permission::{ApplicationType, Permission};

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

    /// `Ok` when the caller holds `permission`, 403 otherwise.
    pub fn require(&self, permission: Permission) -> Result<(), Error> {
        if self.holds(permission) {
            Ok(())
        } else {
            Err(Error::Forbidden)
        }
    }
}
