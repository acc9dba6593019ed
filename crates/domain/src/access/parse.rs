//! Validation of access rules and permission lists.

use super::{AccessRule, RawCondition, RuleScope, Transform, parse_conditions};
use crate::container::Container;
use crate::error::ValidationErrors;
use crate::permission::{ApplicationType, Permission};

/// An access rule as a client sent it, before validation.
#[derive(Clone, Debug, Default)]
pub struct RawRule {
    /// `description`.
    pub description: Option<String>,
    /// `priority`.
    pub priority: Option<i64>,
    /// `container`.
    pub container: Option<String>,
    /// `conditions` (session rules only; refused on applications).
    pub conditions: Option<Vec<RawCondition>>,
    /// `transform`.
    pub transform: Option<String>,
    /// `permissions`.
    pub permissions: Option<Vec<String>>,
}

/// The most rules one application may have (each is evaluated on every token access).
pub const MAX_RULES: usize = 100;

/// The longest rule description accepted.
pub const MAX_DESCRIPTION_LEN: usize = 1000;

/// Whose rules are parsed: an application's (scoped by `container`) or a session's (scoped by
/// `conditions`, token permissions only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleKind {
    /// Rules of an application of this type.
    Application(ApplicationType),
    /// Rules of a session.
    Session,
}

impl RuleKind {
    /// The application type whose permissions the rules may name (a session holds token
    /// permissions only: those of private applications).
    pub fn permission_type(self) -> ApplicationType {
        match self {
            Self::Application(ty) => ty,
            Self::Session => ApplicationType::Private,
        }
    }
}

/// Validates rules, recording every problem under `rules.<i>.<field>`. Returns the rules sorted
/// by priority.
pub fn parse_rules(
    kind: RuleKind,
    raw: Vec<RawRule>,
    errors: &mut ValidationErrors,
) -> Vec<AccessRule> {
    let ty = kind.permission_type();
    if kind == RuleKind::Application(ApplicationType::Management) && !raw.is_empty() {
        errors.add("rules", "management applications cannot have access rules");
        return Vec::new();
    }
    if raw.len() > MAX_RULES {
        errors.add("rules", "at most 100 rules");
        return Vec::new();
    }
    let mut rules = Vec::with_capacity(raw.len());
    let mut seen_priorities = Vec::new();
    for (i, rule) in raw.into_iter().enumerate() {
        let field = |name: &str| format!("rules.{i}.{name}");
        let mut ok = true;
        let description = rule.description;
        if description
            .as_ref()
            .is_some_and(|d| d.chars().count() > MAX_DESCRIPTION_LEN)
        {
            errors.add(field("description"), "must be at most 1000 characters");
            ok = false;
        }
        let priority = match rule.priority {
            None => {
                errors.add(field("priority"), "is required");
                None
            }
            Some(p) if p < 1 || p > i64::from(u32::MAX) => {
                errors.add(field("priority"), "must be an integer of at least 1");
                None
            }
            Some(p) => {
                let p = u32::try_from(p).unwrap_or(u32::MAX);
                if seen_priorities.contains(&p) {
                    errors.add(field("priority"), "must be unique within the application");
                    None
                } else {
                    seen_priorities.push(p);
                    Some(p)
                }
            }
        };
        let scope = match kind {
            RuleKind::Application(_) => {
                if rule.conditions.is_some() {
                    errors.add(
                        field("conditions"),
                        "conditions are only allowed on session rules; use container",
                    );
                    ok = false;
                }
                match rule.container.as_deref().map(Container::parse) {
                    None => {
                        errors.add(field("container"), "is required");
                        None
                    }
                    Some(Err(message)) => {
                        errors.add(field("container"), message);
                        None
                    }
                    Some(Ok(c)) => Some(RuleScope::Container(c)),
                }
            }
            RuleKind::Session => {
                if rule.container.is_some() {
                    errors.add(
                        field("container"),
                        "session rules are scoped by conditions, not a container",
                    );
                    ok = false;
                }
                match rule.conditions {
                    None => {
                        errors.add(field("conditions"), "is required");
                        None
                    }
                    Some(raw) => parse_conditions(raw, &field("conditions"), errors)
                        .map(RuleScope::Conditions),
                }
            }
        };
        let transform = match rule.transform.as_deref() {
            None => {
                errors.add(field("transform"), "is required");
                None
            }
            Some(t) => {
                let parsed = Transform::parse(t);
                if parsed.is_none() {
                    errors.add(field("transform"), "must be one of redact, mask, reveal");
                }
                parsed
            }
        };
        let permissions = parse_permissions(
            ty,
            &rule.permissions.unwrap_or_default(),
            &field("permissions"),
            errors,
        );
        if permissions.as_ref().is_some_and(Vec::is_empty) {
            errors.add(field("permissions"), "must not be empty");
            ok = false;
        }
        if let (true, Some(priority), Some(scope), Some(transform), Some(permissions)) =
            (ok, priority, scope, transform, permissions)
        {
            rules.push(AccessRule {
                description,
                priority,
                scope,
                transform,
                permissions,
            });
        }
    }
    rules.sort_by_key(|r| r.priority);
    rules
}

/// Validates permission names for an application of type `ty`; problems are recorded under
/// `<field>.<i>`. Duplicates are dropped; order is kept. `None` when any name was refused.
pub fn parse_permissions(
    ty: ApplicationType,
    raw: &[String],
    field: &str,
    errors: &mut ValidationErrors,
) -> Option<Vec<Permission>> {
    let mut out = Vec::with_capacity(raw.len());
    let mut ok = true;
    for (i, name) in raw.iter().enumerate() {
        match Permission::parse(name) {
            None => {
                errors.add(format!("{field}.{i}"), "is not a known permission");
                ok = false;
            }
            Some(p) if !p.allowed_for(ty) => {
                errors.add(
                    format!("{field}.{i}"),
                    format!("is not allowed for {ty} applications"),
                );
                ok = false;
            }
            Some(p) => {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
    }
    ok.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(priority: i64, container: &str, transform: &str, perms: &[&str]) -> RawRule {
        RawRule {
            description: Some("r".into()),
            priority: Some(priority),
            container: Some(container.into()),
            conditions: None,
            transform: Some(transform.into()),
            permissions: Some(perms.iter().map(|s| (*s).to_string()).collect()),
        }
    }

    #[test]
    fn validation_names_each_field() {
        let mut errors = ValidationErrors::new();
        let mut no_container = raw(1, "/", "reveal", &["token:read"]);
        no_container.container = None;
        let list = vec![
            no_container,
            raw(1, "/x/", "encrypt", &["token:read"]),
            raw(3, "/x/", "mask", &[]),
            raw(0, "bad", "mask", &["application:create"]),
        ];
        parse_rules(
            RuleKind::Application(ApplicationType::Private),
            list,
            &mut errors,
        );
        for field in [
            "rules.0.container",
            "rules.1.priority",
            "rules.1.transform",
            "rules.2.permissions",
            "rules.3.priority",
            "rules.3.container",
            "rules.3.permissions.0",
        ] {
            assert!(errors.contains(field), "{field} missing from {errors:?}");
        }
    }

    #[test]
    fn management_applications_have_no_rules() {
        let mut errors = ValidationErrors::new();
        parse_rules(
            RuleKind::Application(ApplicationType::Management),
            vec![raw(1, "/", "reveal", &["token:read"])],
            &mut errors,
        );
        assert!(errors.contains("rules"));
    }

    #[test]
    fn conditions_are_refused_on_application_rules() {
        let mut errors = ValidationErrors::new();
        let mut r = raw(1, "/", "reveal", &["token:read"]);
        r.conditions = Some(vec![RawCondition::default()]);
        parse_rules(
            RuleKind::Application(ApplicationType::Private),
            vec![r],
            &mut errors,
        );
        assert!(errors.contains("rules.0.conditions"));
    }

    #[test]
    fn session_rules_need_conditions_and_no_container() {
        let mut errors = ValidationErrors::new();
        let with_container = raw(1, "/", "reveal", &["token:read"]);
        let mut without_conditions = raw(2, "/", "reveal", &["token:read"]);
        without_conditions.container = None;
        let mut management = raw(3, "/", "reveal", &["application:create"]);
        management.container = None;
        management.conditions = Some(vec![RawCondition {
            attribute: Some("id".into()),
            operator: Some("equals".into()),
            value: Some("x".into()),
        }]);
        let parsed = parse_rules(
            RuleKind::Session,
            vec![with_container, without_conditions, management],
            &mut errors,
        );
        assert!(parsed.is_empty());
        for field in [
            "rules.0.container",
            "rules.0.conditions",
            "rules.1.conditions",
            "rules.2.permissions.0",
        ] {
            assert!(errors.contains(field), "{field} missing from {errors:?}");
        }
    }
}
