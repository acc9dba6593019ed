//! Access rules and their evaluation (docs/api.md, Access rules; docs/decisions.md §4).

mod condition;
mod parse;

pub use condition::{
    ConditionAttribute, ConditionOperator, MAX_CONDITIONS, RawCondition, RuleCondition, TokenRef,
    parse_conditions,
};
pub use parse::{
    MAX_DESCRIPTION_LEN, MAX_RULES, RawRule, RuleKind, parse_permissions, parse_rules,
};

use crate::container::Container;
use crate::permission::Permission;

/// What a read returns of a token's `data`, ordered from least to most shown (a session's
/// transform is capped by its authorizer's: the lesser wins).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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

/// Which tokens a rule covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleScope {
    /// A container and everything below it (application rules).
    Container(Container),
    /// Tokens for which every condition holds (session rules).
    Conditions(Vec<RuleCondition>),
}

impl RuleScope {
    /// Whether the scope covers `token`.
    pub fn covers(&self, token: TokenRef<'_>) -> bool {
        match self {
            Self::Container(c) => c.covers(token.container),
            Self::Conditions(conditions) => conditions.iter().all(|c| c.holds(token)),
        }
    }
}

/// A validated access rule: permissions scoped to a container (or, for sessions, to the tokens
/// its conditions select), with a transform applied to the tokens it grants access to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessRule {
    /// Free text.
    pub description: Option<String>,
    /// 1 is evaluated first; unique within an application.
    pub priority: u32,
    /// The tokens the rule covers.
    pub scope: RuleScope,
    /// The transform applied when this rule decides.
    pub transform: Transform,
    /// Permissions the rule grants (never empty).
    pub permissions: Vec<Permission>,
}

/// Decides access to `token` for `permission` (docs/decisions.md §4): the first rule (ascending
/// priority) whose scope covers the token and that lists the permission decides; otherwise a
/// plain permission grants with the implicit transform (`reveal` for use, `mask` for everything
/// else); otherwise `None` (denied).
pub fn evaluate(
    rules: &[AccessRule],
    plain: &[Permission],
    token: TokenRef<'_>,
    permission: Permission,
) -> Option<Transform> {
    debug_assert!(rules.windows(2).all(|w| w[0].priority < w[1].priority));
    rules
        .iter()
        .find(|r| r.scope.covers(token) && r.permissions.contains(&permission))
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
    use crate::error::ValidationErrors;
    use crate::permission::ApplicationType;

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

    fn rules(list: Vec<RawRule>) -> Vec<AccessRule> {
        let mut errors = ValidationErrors::new();
        let parsed = parse_rules(
            RuleKind::Application(ApplicationType::Private),
            list,
            &mut errors,
        );
        assert!(errors.is_empty(), "{errors:?}");
        parsed
    }

    fn at(container: &Container) -> TokenRef<'_> {
        TokenRef {
            id: "tok",
            container,
        }
    }

    fn c(path: &str) -> Container {
        Container::parse(path).unwrap()
    }

    #[test]
    fn session_rules_decide_by_their_conditions() {
        let rs = vec![AccessRule {
            description: None,
            priority: 1,
            scope: RuleScope::Conditions(vec![
                RuleCondition {
                    attribute: ConditionAttribute::Id,
                    operator: ConditionOperator::StartsWith,
                    value: "to".into(),
                },
                RuleCondition {
                    attribute: ConditionAttribute::Container,
                    operator: ConditionOperator::Equals,
                    value: "/pci/".into(),
                },
            ]),
            transform: Transform::Reveal,
            permissions: vec![Permission::TokenRead],
        }];
        let read = Permission::TokenRead;
        assert_eq!(
            evaluate(&rs, &[], at(&c("/pci/")), read),
            Some(Transform::Reveal)
        );
        // Every condition must hold.
        assert_eq!(evaluate(&rs, &[], at(&c("/pci/high/")), read), None);
        let other = c("/pci/");
        let other_id = TokenRef {
            id: "xtok",
            container: &other,
        };
        assert_eq!(evaluate(&rs, &[], other_id, read), None);
    }

    #[test]
    fn first_matching_rule_by_priority_decides() {
        // Given out of order on purpose: evaluation follows priority, not position.
        let rs = rules(vec![
            raw(2, "/", "reveal", &["token:read"]),
            raw(1, "/pci/", "mask", &["token:read"]),
        ]);
        assert_eq!(
            evaluate(&rs, &[], at(&c("/pci/high/")), Permission::TokenRead),
            Some(Transform::Mask)
        );
        assert_eq!(
            evaluate(&rs, &[], at(&c("/bank/")), Permission::TokenRead),
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
            evaluate(&rs, &[], at(&c("/pci/")), Permission::TokenRead),
            Some(Transform::Reveal)
        );
    }

    #[test]
    fn plain_permission_is_the_fallback_with_implicit_transform() {
        let rs = rules(vec![raw(1, "/pci/", "reveal", &["token:read"])]);
        let plain = [Permission::TokenRead, Permission::TokenUse];
        assert_eq!(
            evaluate(&rs, &plain, at(&c("/bank/")), Permission::TokenRead),
            Some(Transform::Mask)
        );
        assert_eq!(
            evaluate(&rs, &plain, at(&c("/bank/")), Permission::TokenUse),
            Some(Transform::Reveal)
        );
        assert_eq!(
            evaluate(&rs, &[], at(&c("/bank/")), Permission::TokenRead),
            None
        );
    }
}
