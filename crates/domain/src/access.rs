//! Access rules and their evaluation (docs/api.md, Access rules; docs/decisions.md §4).

use crate::container::Container;
use crate::error::ValidationErrors;
use crate::permission::{ApplicationType, Permission};

/// What a read returns of a token's `data`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transform {
    /// No `data`.
    Redact,
    /// The evaluated mask, or no `data` when the token has none.
    Mask,
    /// The plaintext.
    Reveal,
}

impl Transform {
    /// Parses the wire name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "redact" => Some(Self::Redact),
            "mask" => Some(Self::Mask),
            "reveal" => Some(Self::Reveal),
            _ => None,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Redact => "redact",
            Self::Mask => "mask",
            Self::Reveal => "reveal",
        }
    }
}

/// A validated access rule of an application: permissions scoped to a container, with a
/// transform applied to the tokens it grants access to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessRule {
    /// Free text.
    pub description: Option<String>,
    /// 1 is evaluated first; unique within an application.
    pub priority: u32,
    /// The container (and everything below it) the rule covers.
    pub container: Container,
    /// The transform applied when this rule decides.
    pub transform: Transform,
    /// Permissions the rule grants (never empty).
    pub permissions: Vec<Permission>,
}

/// An access rule as a client sent it, before validation.
#[derive(Clone, Debug, Default)]
pub struct RawRule {
    /// `description`.
    pub description: Option<String>,
    /// `priority`.
    pub priority: Option<i64>,
    /// `container`.
    pub container: Option<String>,
    /// Whether `conditions` was given (session rules only; refused on applications).
    pub has_conditions: bool,
    /// `transform`.
    pub transform: Option<String>,
    /// `permissions`.
    pub permissions: Option<Vec<String>>,
}

/// The most rules one application may have (each is evaluated on every token access).
pub const MAX_RULES: usize = 100;

/// The longest rule description accepted.
pub const MAX_DESCRIPTION_LEN: usize = 1000;

/// Validates the rules of an application of type `ty`, recording every problem under
/// `rules.<i>.<field>`. Returns the rules sorted by priority.
pub fn parse_rules(
    ty: ApplicationType,
    raw: Vec<RawRule>,
    errors: &mut ValidationErrors,
) -> Vec<AccessRule> {
    if ty == ApplicationType::Management && !raw.is_empty() {
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
        if rule.has_conditions {
            errors.add(
                field("conditions"),
                "conditions are only allowed on session rules; use container",
            );
            ok = false;
        }
        let container = match rule.container.as_deref().map(Container::parse) {
            None => {
                errors.add(field("container"), "is required");
                None
            }
            Some(Err(message)) => {
                errors.add(field("container"), message);
                None
            }
            Some(Ok(c)) => Some(c),
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
        if let (true, Some(priority), Some(container), Some(transform), Some(permissions)) =
            (ok, priority, container, transform, permissions)
        {
            rules.push(AccessRule {
                description,
                priority,
                container,
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

/// Decides access to a token in `container` for `permission` (docs/decisions.md §4): the first rule
/// (ascending priority) whose container covers the token's and that lists the permission decides;
/// otherwise a plain permission grants with the implicit transform (`reveal` for use, `mask` for
/// everything else); otherwise `None` (denied).
pub fn evaluate(
    rules: &[AccessRule],
    plain: &[Permission],
    container: &Container,
    permission: Permission,
) -> Option<Transform> {
    debug_assert!(rules.windows(2).all(|w| w[0].priority < w[1].priority));
    rules
        .iter()
        .find(|r| r.container.covers(container) && r.permissions.contains(&permission))
        .map(|r| r.transform)
        .or_else(|| {
            plain
                .contains(&permission)
                .then_some(if permission == Permission::TokenUse {
                    Transform::Reveal
                } else {
                    Transform::Mask
                })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(priority: i64, container: &str, transform: &str, perms: &[&str]) -> RawRule {
        RawRule {
            description: Some("r".into()),
            priority: Some(priority),
            container: Some(container.into()),
            has_conditions: false,
            transform: Some(transform.into()),
            permissions: Some(perms.iter().map(|s| (*s).to_string()).collect()),
        }
    }

    fn rules(list: Vec<RawRule>) -> Vec<AccessRule> {
        let mut errors = ValidationErrors::new();
        let parsed = parse_rules(ApplicationType::Private, list, &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        parsed
    }

    fn c(path: &str) -> Container {
        Container::parse(path).unwrap()
    }

    #[test]
    fn first_matching_rule_by_priority_decides() {
        // Given out of order on purpose: evaluation follows priority, not position.
        let rs = rules(vec![
            raw(2, "/", "reveal", &["token:read"]),
            raw(1, "/pci/", "mask", &["token:read"]),
        ]);
        assert_eq!(
            evaluate(&rs, &[], &c("/pci/high/"), Permission::TokenRead),
            Some(Transform::Mask)
        );
        assert_eq!(
            evaluate(&rs, &[], &c("/bank/"), Permission::TokenRead),
            Some(Transform::Reveal)
        );
    }

    #[test]
    fn rule_without_the_permission_does_not_decide() {
        let rs = rules(vec![
            raw(1, "/pci/", "redact", &["token:create"]),
            raw(2, "/", "reveal", &["token:read"]),
        ]);
        assert_eq!(
            evaluate(&rs, &[], &c("/pci/"), Permission::TokenRead),
            Some(Transform::Reveal)
        );
    }

    #[test]
    fn plain_permission_is_the_fallback_with_implicit_transform() {
        let rs = rules(vec![raw(1, "/pci/", "reveal", &["token:read"])]);
        let plain = [Permission::TokenRead, Permission::TokenUse];
        assert_eq!(
            evaluate(&rs, &plain, &c("/bank/"), Permission::TokenRead),
            Some(Transform::Mask)
        );
        assert_eq!(
            evaluate(&rs, &plain, &c("/bank/"), Permission::TokenUse),
            Some(Transform::Reveal)
        );
        assert_eq!(
            evaluate(&rs, &[], &c("/bank/"), Permission::TokenRead),
            None
        );
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
        parse_rules(ApplicationType::Private, list, &mut errors);
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
            ApplicationType::Management,
            vec![raw(1, "/", "reveal", &["token:read"])],
            &mut errors,
        );
        assert!(errors.contains("rules"));
    }

    #[test]
    fn conditions_are_refused_on_application_rules() {
        let mut errors = ValidationErrors::new();
        let mut r = raw(1, "/", "reveal", &["token:read"]);
        r.has_conditions = true;
        parse_rules(ApplicationType::Private, vec![r], &mut errors);
        assert!(errors.contains("rules.0.conditions"));
    }
}
