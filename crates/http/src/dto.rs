//! Wire shapes of requests and responses, and their conversion to and from domain types.
//! Domain types never derive `Serialize`; only these do.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{OffsetDateTime, UtcOffset};
use tokenvault_domain::access::{AccessRule, RawCondition, RawRule, RuleScope};
use tokenvault_domain::application::{
    ApiKey, Application, RawApplicationUpdate, RawNewApplication,
};
use tokenvault_domain::page::Page;
use tokenvault_domain::tenant::{RawTenantUpdate, Tenant};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::problem::ApiError;

/// RFC 3339 in UTC with milliseconds (docs/decisions.md §1).
pub fn format_time(t: OffsetDateTime) -> String {
    let format =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    t.to_offset(UtcOffset::UTC)
        .format(&format)
        .unwrap_or_else(|_| t.unix_timestamp().to_string())
}

/// Parses an RFC 3339 date (any offset), naming `field` when it is not one.
pub fn parse_time(field: &str, raw: &str) -> Result<OffsetDateTime, ApiError> {
    // `checked_`: a date whose UTC form leaves the years the time crate holds
    // (`9999-12-31T23:00:00-10:00`) is refused, where `to_offset` would panic.
    OffsetDateTime::parse(raw, &Rfc3339)
        .ok()
        .and_then(|t| t.checked_to_offset(UtcOffset::UTC))
        .ok_or_else(|| ApiError::invalid(field, "must be an RFC 3339 date"))
}

/// An access rule in a request.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RuleRequest {
    /// Free text.
    pub description: Option<String>,
    /// 1 is evaluated first; unique within the application.
    pub priority: Option<i64>,
    /// Container the rule covers (with everything below it).
    pub container: Option<String>,
    /// Session rules only (instead of `container`); refused on applications.
    pub conditions: Option<Vec<ConditionRequest>>,
    /// `redact`, `mask` or `reveal`.
    pub transform: Option<String>,
    /// Permissions the rule grants.
    pub permissions: Option<Vec<String>>,
}

impl From<RuleRequest> for RawRule {
    fn from(r: RuleRequest) -> Self {
        RawRule {
            description: r.description,
            priority: r.priority,
            container: r.container,
            conditions: r
                .conditions
                .map(|list| list.into_iter().map(Into::into).collect()),
            transform: r.transform,
            permissions: r.permissions,
        }
    }
}

/// A condition of a session rule: it holds when the token's `attribute` compares true with
/// `value` under `operator`.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct ConditionRequest {
    /// `id` or `container`.
    pub attribute: Option<String>,
    /// `equals` or `starts_with`.
    pub operator: Option<String>,
    /// Compared with the token's attribute (containers lower-cased).
    pub value: Option<String>,
}

impl From<ConditionRequest> for RawCondition {
    fn from(c: ConditionRequest) -> Self {
        RawCondition {
            attribute: c.attribute,
            operator: c.operator,
            value: c.value,
        }
    }
}

/// An access rule in a response.
#[derive(Debug, Serialize, ToSchema)]
pub struct RuleResponse {
    /// Free text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Precedence (1 first).
    pub priority: u32,
    /// Container the rule covers (application rules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// Conditions that select the tokens the rule covers (session rules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<ConditionRequest>>,
    /// Transform applied.
    pub transform: String,
    /// Permissions granted.
    pub permissions: Vec<String>,
}

impl From<&AccessRule> for RuleResponse {
    fn from(r: &AccessRule) -> Self {
        Self {
            description: r.description.clone(),
            priority: r.priority,
            container: match &r.scope {
                RuleScope::Container(c) => Some(c.as_str().to_string()),
                RuleScope::Conditions(_) => None,
            },
            conditions: match &r.scope {
                RuleScope::Container(_) => None,
                RuleScope::Conditions(list) => Some(
                    list.iter()
                        .map(|c| ConditionRequest {
                            attribute: Some(c.attribute_name().to_string()),
                            operator: Some(c.operator_name().to_string()),
                            value: Some(c.value.clone()),
                        })
                        .collect(),
                ),
            },
            transform: r.transform.as_str().to_string(),
            permissions: r
                .permissions
                .iter()
                .map(|p| p.as_str().to_string())
                .collect(),
        }
    }
}

/// `POST /applications`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateApplicationRequest {
    /// 1..=200 characters.
    pub name: Option<String>,
    /// `private`, `public` or `management`.
    #[serde(rename = "type")]
    pub app_type: Option<String>,
    /// Plain permissions (valid for the type).
    pub permissions: Option<Vec<String>>,
    /// Access rules (public and private applications).
    pub rules: Option<Vec<RuleRequest>>,
    /// RFC 3339, in the future.
    pub expires_at: Option<String>,
}

impl CreateApplicationRequest {
    /// Converts to the domain's raw input (dates parsed here).
    pub fn into_domain(self) -> Result<RawNewApplication, ApiError> {
        let expires_at = self
            .expires_at
            .as_deref()
            .map(|raw| parse_time("expires_at", raw))
            .transpose()?;
        Ok(RawNewApplication {
            name: self.name,
            app_type: self.app_type,
            permissions: self.permissions.unwrap_or_default(),
            rules: self
                .rules
                .unwrap_or_default()
                .into_iter()
                .map(Into::into)
                .collect(),
            expires_at,
        })
    }
}

/// `PUT /applications/{id}`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateApplicationRequest {
    /// 1..=200 characters.
    pub name: Option<String>,
    /// Plain permissions (replace the current ones).
    pub permissions: Option<Vec<String>>,
    /// Access rules (replace the current ones).
    pub rules: Option<Vec<RuleRequest>>,
}

impl From<UpdateApplicationRequest> for RawApplicationUpdate {
    fn from(r: UpdateApplicationRequest) -> Self {
        RawApplicationUpdate {
            name: r.name,
            permissions: r.permissions.unwrap_or_default(),
            rules: r
                .rules
                .unwrap_or_default()
                .into_iter()
                .map(Into::into)
                .collect(),
        }
    }
}

/// An application. `key` only in the create and regenerate responses.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApplicationResponse {
    /// Identifier.
    pub id: Uuid,
    /// Owning tenant.
    pub tenant_id: Uuid,
    /// Name.
    pub name: String,
    /// The API key: shown once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// `private`, `public` or `management`.
    #[serde(rename = "type")]
    pub app_type: String,
    /// Plain permissions.
    pub permissions: Vec<String>,
    /// Access rules by priority.
    pub rules: Vec<RuleResponse>,
    /// Creating application.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_by: Option<Uuid>,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// Last modifying application.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_by: Option<Uuid>,
    /// RFC 3339 UTC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_at: Option<String>,
    /// RFC 3339 UTC; the application is deleted then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

impl ApplicationResponse {
    /// The response for `app`, showing `key` when given.
    pub fn new(app: Application, key: Option<&ApiKey>) -> Self {
        Self {
            id: app.id,
            tenant_id: app.tenant_id,
            name: app.name,
            key: key.map(|k| k.expose().to_string()),
            app_type: app.app_type.as_str().to_string(),
            permissions: app
                .permissions
                .iter()
                .map(|p| p.as_str().to_string())
                .collect(),
            rules: app.rules.iter().map(RuleResponse::from).collect(),
            created_by: app.created_by,
            created_at: format_time(app.created_at),
            modified_by: app.modified_by,
            modified_at: app.modified_at.map(format_time),
            expires_at: app.expires_at.map(format_time),
        }
    }
}

/// Tenant settings: each value the string `"true"` or `"false"`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SettingsResponse {
    /// Fingerprint every token with its type's default expression.
    pub fingerprint_tokens: String,
    /// Deduplicate tokens on creation and update.
    pub deduplicate_tokens: String,
}

/// A tenant.
#[derive(Debug, Serialize, ToSchema)]
pub struct TenantResponse {
    /// Identifier.
    pub id: Uuid,
    /// Owner.
    pub owner_id: Uuid,
    /// Name.
    pub name: String,
    /// Settings.
    pub settings: SettingsResponse,
    /// Creator, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_by: Option<Uuid>,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// Last modifying application.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_by: Option<Uuid>,
    /// RFC 3339 UTC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_at: Option<String>,
}

impl From<Tenant> for TenantResponse {
    fn from(t: Tenant) -> Self {
        Self {
            id: t.id,
            owner_id: t.owner_id,
            name: t.name,
            settings: SettingsResponse {
                fingerprint_tokens: t.settings.fingerprint_tokens.to_string(),
                deduplicate_tokens: t.settings.deduplicate_tokens.to_string(),
            },
            created_by: t.created_by,
            created_at: format_time(t.created_at),
            modified_by: t.modified_by,
            modified_at: t.modified_at.map(format_time),
        }
    }
}

/// `PUT /tenants/self`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateTenantRequest {
    /// 1..=200 characters.
    pub name: Option<String>,
    /// Only the settings given change; values are `"true"` or `"false"`.
    #[schema(value_type = Option<BTreeMap<String, String>>)]
    pub settings: Option<BTreeMap<String, serde_json::Value>>,
}

impl From<UpdateTenantRequest> for RawTenantUpdate {
    fn from(r: UpdateTenantRequest) -> Self {
        RawTenantUpdate {
            name: r.name,
            settings: r
                .settings
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.as_str().map(str::to_owned)))
                .collect(),
        }
    }
}

/// The pagination object of every list (docs/decisions.md §3).
#[derive(Debug, Serialize, ToSchema)]
pub struct Pagination {
    /// Items over all pages.
    pub total_items: u64,
    /// This page (1-based).
    pub page_number: u64,
    /// Items per page.
    pub page_size: u64,
    /// Number of pages.
    pub total_pages: u64,
}

/// A page of a list.
#[derive(Debug, Serialize, ToSchema)]
pub struct Paginated<T: ToSchema> {
    /// Where this page is.
    pub pagination: Pagination,
    /// The items.
    pub data: Vec<T>,
}

impl<T: ToSchema> Paginated<T> {
    /// Converts a domain page.
    pub fn from_page<U>(page: Page<U>, convert: impl Fn(U) -> T) -> Self {
        Self {
            pagination: Pagination {
                total_items: page.total_items,
                page_number: page.request.page,
                page_size: page.request.size,
                total_pages: page.total_pages(),
            },
            data: page.items.into_iter().map(convert).collect(),
        }
    }
}

/// `GET /health`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok`.
    pub status: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_with_millis() {
        let t = parse_time("x", "2026-11-21T12:00:00.123456+02:00").unwrap();
        assert_eq!(format_time(t), "2026-11-21T10:00:00.123Z");
        assert!(parse_time("x", "tomorrow").is_err());
        // UTC of this is past the years a date holds: refused, not a panic.
        assert!(parse_time("x", "9999-12-31T23:00:00-10:00").is_err());
    }
}

/// `POST /reactors/{id}/react`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ReactRequest {
    /// Arguments: declared request parameters; `{{ token_id }}` expressions are replaced by
    /// the tokens' data first.
    #[schema(value_type = Option<Object>)]
    pub args: Option<serde_json::Value>,
}
