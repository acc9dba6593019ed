//! The authenticated caller and its permission checks.

use uuid::Uuid;

use std::sync::Arc;

use crate::access::{AccessRule, RuleScope, TokenRef, Transform};
use crate::error::Error;
use crate::permission::{ApplicationType, Permission};
use crate::ports::Visibility;
use crate::tenant::TenantSettings;

/// Who is calling: the application (or session) behind a valid, unexpired API key.
#[derive(Clone, Debug)]
pub struct Principal {
    /// The application; for a session, the session's own id (what rate limits, idempotency
    /// keys and `created_by` are kept by).
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
    /// Set when the key is a session's: what its authorizer holds now caps what it may do.
    pub session: Option<Arc<SessionCeiling>>,
    /// The request's trace id (audit log).
    pub trace_id: Option<String>,
}

/// The rights of the application that authorized a session, read with the session's key: a
/// session never does more than its authorizer could (docs/decisions.md §4, sessions).
#[derive(Clone, Debug)]
pub struct SessionCeiling {
    /// The authorizing application.
    pub authorized_by: Uuid,
    /// Its plain permissions.
    pub permissions: Vec<Permission>,
    /// Its rules, by priority.
    pub rules: Vec<AccessRule>,
}

impl Principal {
    /// Whether the caller holds `permission` plainly or through any rule (a session: and its
    /// authorizer does too).
    pub fn holds(&self, permission: Permission) -> bool {
        holds(&self.permissions, &self.rules, permission)
            && self
                .session
                .as_ref()
                .is_none_or(|c| holds(&c.permissions, &c.rules, permission))
    }

    /// `Ok` for an application's key, 403 for a session's: sessions hold token permissions
    /// only and every other endpoint refuses them (docs/decisions.md §4, sessions).
    pub fn require_application(&self) -> Result<(), Error> {
        if self.session.is_some() {
            Err(Error::Forbidden)
        } else {
            Ok(())
        }
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
            session: None,
            trace_id: None,
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
    /// The transform under which the caller may do `permission` on `token` (docs/decisions.md
    /// §4), or `None` when no rule or plain permission grants it. A session's is capped by its
    /// authorizer's decision on the same token: both must grant, and the lesser transform wins.
    pub fn access(&self, token: TokenRef<'_>, permission: Permission) -> Option<Transform> {
        let own = crate::access::evaluate(&self.rules, &self.permissions, token, permission)?;
        match &self.session {
            None => Some(own),
            Some(ceiling) => {
                crate::access::evaluate(&ceiling.rules, &ceiling.permissions, token, permission)
                    .map(|cap| own.min(cap))
            }
        }
    }

    /// `Ok(transform)` when granted, 403 otherwise.
    pub fn require_on(
        &self,
        token: TokenRef<'_>,
        permission: Permission,
    ) -> Result<Transform, Error> {
        self.access(token, permission).ok_or(Error::Forbidden)
    }

    /// Whether every token the caller may exercise `permission` on is shown to it under
    /// `reveal`: every rule listing it a `reveal` rule, and no plain grant of it (whose implicit
    /// transform is `mask`, `reveal` only for `token:use`) unless a rule on `/` leaves it
    /// nothing to decide; for the caller and for a session's authorizer alike.
    pub fn reveals_all(&self, permission: Permission) -> bool {
        let reveals = |permissions: &[Permission], rules: &[AccessRule]| {
            let mut granting = rules.iter().filter(|r| r.permissions.contains(&permission));
            // A rule on `/` decides every token, so a plain grant never applies beside it.
            let covers_all = granting
                .clone()
                .any(|r| matches!(&r.scope, RuleScope::Container(c) if c.as_str() == "/"));
            (!permissions.contains(&permission) || permission == Permission::TokenUse || covers_all)
                && granting.all(|r| r.transform == Transform::Reveal)
        };
        reveals(&self.permissions, &self.rules)
            && self
                .session
                .as_ref()
                .is_none_or(|c| reveals(&c.permissions, &c.rules))
    }

    /// Which tokens the caller may exercise `permission` on, for filtering in a query.
    pub fn visibility(&self, permission: Permission) -> Visibility {
        let own = visibility(&self.permissions, &self.rules, permission);
        match &self.session {
            None => own,
            Some(ceiling) => Visibility::both(
                own,
                visibility(&ceiling.permissions, &ceiling.rules, permission),
            ),
        }
    }
}

fn holds(permissions: &[Permission], rules: &[AccessRule], permission: Permission) -> bool {
    permissions.contains(&permission) || rules.iter().any(|r| r.permissions.contains(&permission))
}

/// The tokens that `permission` is granted on by these grants: every one when it is plain (or a
/// rule covers `/`); otherwise those some rule listing it covers.
fn visibility(
    permissions: &[Permission],
    rules: &[AccessRule],
    permission: Permission,
) -> Visibility {
    if permissions.contains(&permission) {
        return Visibility::All;
    }
    let mut prefixes = Vec::new();
    let mut clauses = Vec::new();
    for rule in rules.iter().filter(|r| r.permissions.contains(&permission)) {
        match &rule.scope {
            RuleScope::Container(c) if c.as_str() == "/" => return Visibility::All,
            RuleScope::Container(c) => prefixes.push(c.as_str().to_string()),
            RuleScope::Conditions(conditions) => clauses.push(conditions.clone()),
        }
    }
    match (prefixes.is_empty(), clauses.is_empty()) {
        (_, true) => Visibility::Prefixes(prefixes),
        (true, false) => Visibility::Conditions(clauses),
        // Never made (rules of one principal are all of one kind), but kept exact: either.
        (false, false) => Visibility::Either(
            Box::new(Visibility::Prefixes(prefixes)),
            Box::new(Visibility::Conditions(clauses)),
        ),
    }
}
