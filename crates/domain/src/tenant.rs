//! Tenants and their settings (docs/api.md, Tenants; docs/decisions.md §5).

use std::collections::BTreeMap;

use time::OffsetDateTime;
use uuid::Uuid;

use crate::application::parse_name;
use crate::error::{Error, ValidationErrors};

/// Per-tenant switches for fingerprinting and deduplication. Both default to `false`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TenantSettings {
    /// Fingerprint every token with its type's default expression.
    pub fingerprint_tokens: bool,
    /// Deduplicate tokens on creation and update.
    pub deduplicate_tokens: bool,
}

impl TenantSettings {
    /// The settings as the wire's name → `"true"`/`"false"` pairs.
    pub fn entries(self) -> [(&'static str, bool); 2] {
        [
            ("fingerprint_tokens", self.fingerprint_tokens),
            ("deduplicate_tokens", self.deduplicate_tokens),
        ]
    }
}

/// A tenant: the unit of isolation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tenant {
    /// Identifier.
    pub id: Uuid,
    /// The user that owns it.
    pub owner_id: Uuid,
    /// 1..=200 characters.
    pub name: String,
    /// Settings.
    pub settings: TenantSettings,
    /// Who created it (an application), if known.
    pub created_by: Option<Uuid>,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Who last changed it.
    pub modified_by: Option<Uuid>,
    /// Last change.
    pub modified_at: Option<OffsetDateTime>,
}

/// `PUT /tenants/self` as a client sent it. A setting value is `None` when it was not a string.
#[derive(Clone, Debug, Default)]
pub struct RawTenantUpdate {
    /// `name`.
    pub name: Option<String>,
    /// `settings`: only the named settings change.
    pub settings: BTreeMap<String, Option<String>>,
}

/// A validated tenant update.
#[derive(Clone, Debug)]
pub struct TenantChanges {
    /// New name.
    pub name: String,
    /// New `fingerprint_tokens`, when given.
    pub fingerprint_tokens: Option<bool>,
    /// New `deduplicate_tokens`, when given.
    pub deduplicate_tokens: Option<bool>,
}

impl TenantChanges {
    /// Validates an update; settings must be the strings `"true"` or `"false"`.
    pub fn parse(raw: RawTenantUpdate) -> Result<Self, Error> {
        let mut errors = ValidationErrors::new();
        let name = parse_name(raw.name, &mut errors);
        let mut flag = |key: &str| -> Option<bool> {
            match raw.settings.get(key)? {
                Some(v) if v == "true" => Some(true),
                Some(v) if v == "false" => Some(false),
                _ => {
                    errors.add(
                        format!("settings.{key}"),
                        "must be the string \"true\" or \"false\"",
                    );
                    None
                }
            }
        };
        let fingerprint_tokens = flag("fingerprint_tokens");
        let deduplicate_tokens = flag("deduplicate_tokens");
        match name {
            Some(name) if errors.is_empty() => Ok(Self {
                name,
                fingerprint_tokens,
                deduplicate_tokens,
            }),
            _ => Err(Error::Validation(errors)),
        }
    }

    /// Applies the changes to `tenant`.
    pub fn apply(self, tenant: &mut Tenant) {
        tenant.name = self.name;
        if let Some(v) = self.fingerprint_tokens {
            tenant.settings.fingerprint_tokens = v;
        }
        if let Some(v) = self.deduplicate_tokens {
            tenant.settings.deduplicate_tokens = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(name: Option<&str>, settings: &[(&str, Option<&str>)]) -> RawTenantUpdate {
        RawTenantUpdate {
            name: name.map(str::to_string),
            settings: settings
                .iter()
                .map(|(k, v)| ((*k).to_string(), v.map(str::to_string)))
                .collect(),
        }
    }

    #[test]
    fn settings_must_be_boolean_strings() {
        let ok =
            TenantChanges::parse(raw(Some("t"), &[("fingerprint_tokens", Some("true"))])).unwrap();
        assert_eq!(ok.fingerprint_tokens, Some(true));
        assert_eq!(ok.deduplicate_tokens, None);
        for bad in [Some("yes"), Some("TRUE"), None] {
            let err =
                TenantChanges::parse(raw(Some("t"), &[("deduplicate_tokens", bad)])).unwrap_err();
            assert!(
                matches!(err, Error::Validation(v) if v.contains("settings.deduplicate_tokens"))
            );
        }
    }

    #[test]
    fn missing_settings_keep_their_value() {
        let mut tenant = Tenant {
            id: Uuid::nil(),
            owner_id: Uuid::nil(),
            name: "a".into(),
            settings: TenantSettings {
                fingerprint_tokens: true,
                deduplicate_tokens: true,
            },
            created_by: None,
            created_at: OffsetDateTime::UNIX_EPOCH,
            modified_by: None,
            modified_at: None,
        };
        TenantChanges::parse(raw(Some("b"), &[("fingerprint_tokens", Some("false"))]))
            .unwrap()
            .apply(&mut tenant);
        assert_eq!(tenant.name, "b");
        assert!(!tenant.settings.fingerprint_tokens);
        assert!(tenant.settings.deduplicate_tokens);
    }

    #[test]
    fn name_is_required() {
        let err = TenantChanges::parse(raw(None, &[])).unwrap_err();
        assert!(matches!(err, Error::Validation(v) if v.contains("name")));
    }
}
