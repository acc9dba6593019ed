//! Conditions of session rules (docs/decisions.md §4, sessions): a rule applies to a token when
//! every one of its conditions holds for the token's id or container.

use crate::container::Container;
use crate::error::ValidationErrors;

/// The token attribute a condition compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConditionAttribute {
    /// The token's id (compared as given: ids are case-sensitive).
    Id,
    /// The token's container (compared lower-cased, as containers are stored).
    Container,
}

/// How a condition compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConditionOperator {
    /// The attribute is the value.
    Equals,
    /// The attribute begins with the value (a string prefix, not a path prefix).
    StartsWith,
}

/// One validated condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleCondition {
    /// What is compared.
    pub attribute: ConditionAttribute,
    /// How.
    pub operator: ConditionOperator,
    /// With what (lower-cased for containers).
    pub value: String,
}

/// The token an access decision is about: conditions need its id, rules its container.
#[derive(Clone, Copy, Debug)]
pub struct TokenRef<'a> {
    /// The token's id.
    pub id: &'a str,
    /// The token's container.
    pub container: &'a Container,
}

impl RuleCondition {
    /// Whether the condition holds for `token`.
    pub fn holds(&self, token: TokenRef<'_>) -> bool {
        let attribute = match self.attribute {
            ConditionAttribute::Id => token.id,
            ConditionAttribute::Container => token.container.as_str(),
        };
        match self.operator {
            ConditionOperator::Equals => attribute == self.value,
            ConditionOperator::StartsWith => attribute.starts_with(&self.value),
        }
    }

    /// The attribute's wire name.
    pub fn attribute_name(&self) -> &'static str {
        match self.attribute {
            ConditionAttribute::Id => "id",
            ConditionAttribute::Container => "container",
        }
    }

    /// The operator's wire name.
    pub fn operator_name(&self) -> &'static str {
        match self.operator {
            ConditionOperator::Equals => "equals",
            ConditionOperator::StartsWith => "starts_with",
        }
    }
}

/// A condition as a client sent it.
#[derive(Clone, Debug, Default)]
pub struct RawCondition {
    /// `attribute`.
    pub attribute: Option<String>,
    /// `operator`.
    pub operator: Option<String>,
    /// `value`.
    pub value: Option<String>,
}

/// The most conditions one rule may have.
pub const MAX_CONDITIONS: usize = 20;

/// The longest condition value accepted (longer than any id or container).
pub const MAX_VALUE_LEN: usize = 1000;

/// Validates the conditions of one rule, recording problems under `<field>.<i>.<name>`.
/// `None` when any was refused.
pub fn parse_conditions(
    raw: Vec<RawCondition>,
    field: &str,
    errors: &mut ValidationErrors,
) -> Option<Vec<RuleCondition>> {
    if raw.is_empty() {
        errors.add(field, "must not be empty");
        return None;
    }
    if raw.len() > MAX_CONDITIONS {
        errors.add(field, "at most 20 conditions");
        return None;
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut ok = true;
    for (i, c) in raw.into_iter().enumerate() {
        let name = |n: &str| format!("{field}.{i}.{n}");
        let attribute = match c.attribute.as_deref() {
            Some("id") => Some(ConditionAttribute::Id),
            Some("container") => Some(ConditionAttribute::Container),
            Some(_) => {
                errors.add(name("attribute"), "must be one of id, container");
                None
            }
            None => {
                errors.add(name("attribute"), "is required");
                None
            }
        };
        let operator = match c.operator.as_deref() {
            Some("equals") => Some(ConditionOperator::Equals),
            Some("starts_with") => Some(ConditionOperator::StartsWith),
            Some(_) => {
                errors.add(name("operator"), "must be one of equals, starts_with");
                None
            }
            None => {
                errors.add(name("operator"), "is required");
                None
            }
        };
        let value = match c.value {
            None => {
                errors.add(name("value"), "is required");
                None
            }
            Some(v) if v.is_empty() => {
                errors.add(name("value"), "must not be empty");
                None
            }
            Some(v) if v.chars().count() > MAX_VALUE_LEN => {
                errors.add(name("value"), "must be at most 1000 characters");
                None
            }
            Some(v) if v.chars().any(char::is_control) => {
                errors.add(name("value"), "must not contain control characters");
                None
            }
            Some(v) => Some(v),
        };
        match (attribute, operator, value) {
            (Some(attribute), Some(operator), Some(value)) => {
                let value = if attribute == ConditionAttribute::Container {
                    value.to_ascii_lowercase()
                } else {
                    value
                };
                out.push(RuleCondition {
                    attribute,
                    operator,
                    value,
                });
            }
            _ => ok = false,
        }
    }
    ok.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(attribute: &str, operator: &str, value: &str) -> RawCondition {
        RawCondition {
            attribute: Some(attribute.into()),
            operator: Some(operator.into()),
            value: Some(value.into()),
        }
    }

    fn parsed(list: Vec<RawCondition>) -> Vec<RuleCondition> {
        let mut errors = ValidationErrors::new();
        let out = parse_conditions(list, "rules.0.conditions", &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        out.unwrap()
    }

    #[test]
    fn conditions_compare_id_and_container() {
        let pci = Container::parse("/pci/high/").unwrap();
        let token = TokenRef {
            id: "Abc-123",
            container: &pci,
        };
        let holds = |a, o, v| parsed(vec![cond(a, o, v)])[0].holds(token);
        assert!(holds("id", "equals", "Abc-123"));
        assert!(!holds("id", "equals", "abc-123"), "ids are case-sensitive");
        assert!(holds("id", "starts_with", "Abc"));
        assert!(!holds("id", "starts_with", "abc"));
        assert!(
            holds("container", "equals", "/PCI/high/"),
            "containers compare lower-cased"
        );
        assert!(holds("container", "starts_with", "/pci/h"));
        assert!(!holds("container", "equals", "/pci/"));
    }

    #[test]
    fn every_field_is_validated() {
        let mut errors = ValidationErrors::new();
        let list = vec![
            cond("type", "equals", "x"),
            cond("id", "contains", "x"),
            cond("id", "equals", ""),
            RawCondition::default(),
        ];
        assert!(parse_conditions(list, "c", &mut errors).is_none());
        for field in [
            "c.0.attribute",
            "c.1.operator",
            "c.2.value",
            "c.3.attribute",
            "c.3.operator",
            "c.3.value",
        ] {
            assert!(errors.contains(field), "{field} missing from {errors:?}");
        }
        let mut errors = ValidationErrors::new();
        assert!(parse_conditions(vec![], "c", &mut errors).is_none());
        assert!(errors.contains("c"));
        let mut errors = ValidationErrors::new();
        let many = (0..21).map(|_| cond("id", "equals", "x")).collect();
        assert!(parse_conditions(many, "c", &mut errors).is_none());
        assert!(errors.contains("c"));
    }
}
