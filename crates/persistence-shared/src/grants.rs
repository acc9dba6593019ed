//! Stored shape of permissions and access rules (JSON text columns of applications and
//! sessions).

use serde::{Deserialize, Serialize};
use tokenvault_domain::RepoError;
use tokenvault_domain::access::{
    AccessRule, ConditionAttribute, ConditionOperator, RuleCondition, RuleScope, Transform,
};
use tokenvault_domain::container::Container;
use tokenvault_domain::permission::Permission;

/// Stored shape of one access rule: `container` for application rules, `conditions` for
/// session rules.
#[derive(Serialize, Deserialize)]
struct RuleRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    priority: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    container: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    conditions: Option<Vec<ConditionRecord>>,
    transform: String,
    permissions: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct ConditionRecord {
    attribute: String,
    operator: String,
    value: String,
}

/// `permissions` as stored: a JSON array of their names.
pub(crate) fn permissions_json(permissions: &[Permission]) -> String {
    let names: Vec<&str> = permissions.iter().map(|p| p.as_str()).collect();
    serde_json::to_string(&names).unwrap_or_else(|_| "[]".into())
}

/// `rules` as stored: a JSON array.
pub(crate) fn rules_json(rules: &[AccessRule]) -> String {
    let records: Vec<RuleRecord> = rules
        .iter()
        .map(|r| {
            let (container, conditions) = match &r.scope {
                RuleScope::Container(c) => (Some(c.as_str().to_string()), None),
                RuleScope::Conditions(list) => (
                    None,
                    Some(
                        list.iter()
                            .map(|c| ConditionRecord {
                                attribute: c.attribute_name().to_string(),
                                operator: c.operator_name().to_string(),
                                value: c.value.clone(),
                            })
                            .collect(),
                    ),
                ),
            };
            RuleRecord {
                description: r.description.clone(),
                priority: r.priority,
                container,
                conditions,
                transform: r.transform.as_str().to_string(),
                permissions: r
                    .permissions
                    .iter()
                    .map(|p| p.as_str().to_string())
                    .collect(),
            }
        })
        .collect();
    serde_json::to_string(&records).unwrap_or_else(|_| "[]".into())
}

/// Reads a permissions column; `corrupt` names what is unreadable.
pub fn parse_permissions(
    text: &str,
    corrupt: &dyn Fn(&str) -> RepoError,
) -> Result<Vec<Permission>, RepoError> {
    let names: Vec<String> = serde_json::from_str(text).map_err(|_| corrupt("permissions"))?;
    permissions(&names, corrupt)
}

fn permissions(
    names: &[String],
    corrupt: &dyn Fn(&str) -> RepoError,
) -> Result<Vec<Permission>, RepoError> {
    names
        .iter()
        .map(|n| Permission::parse(n).ok_or_else(|| corrupt("permission")))
        .collect()
}

/// Reads a rules column; `corrupt` names what is unreadable.
pub fn parse_rules(
    text: &str,
    corrupt: &dyn Fn(&str) -> RepoError,
) -> Result<Vec<AccessRule>, RepoError> {
    let records: Vec<RuleRecord> = serde_json::from_str(text).map_err(|_| corrupt("rules"))?;
    records
        .into_iter()
        .map(|r| {
            let scope = match (r.container, r.conditions) {
                (Some(c), None) => {
                    RuleScope::Container(Container::parse(&c).map_err(|_| corrupt("rule"))?)
                }
                (None, Some(list)) => RuleScope::Conditions(
                    list.into_iter()
                        .map(|c| condition(c).ok_or_else(|| corrupt("rule condition")))
                        .collect::<Result<_, _>>()?,
                ),
                _ => return Err(corrupt("rule")),
            };
            Ok(AccessRule {
                description: r.description,
                priority: r.priority,
                scope,
                transform: Transform::parse(&r.transform).ok_or_else(|| corrupt("rule"))?,
                permissions: permissions(&r.permissions, corrupt)?,
            })
        })
        .collect()
}

fn condition(record: ConditionRecord) -> Option<RuleCondition> {
    let attribute = match record.attribute.as_str() {
        "id" => ConditionAttribute::Id,
        "container" => ConditionAttribute::Container,
        _ => return None,
    };
    let operator = match record.operator.as_str() {
        "equals" => ConditionOperator::Equals,
        "starts_with" => ConditionOperator::StartsWith,
        _ => return None,
    };
    Some(RuleCondition {
        attribute,
        operator,
        value: record.value,
    })
}
