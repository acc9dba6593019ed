//! Applications: API credentials with a type, permissions and access rules.

use std::fmt;

use time::OffsetDateTime;
use uuid::Uuid;

use crate::access::{self, AccessRule, RawRule};
use crate::error::{Error, ValidationErrors};
use crate::permission::{ApplicationType, Permission};

/// The longest name of an application, proxy, reactor or tenant (docs/api.md).
pub const MAX_NAME_LEN: usize = 200;

/// Validates a resource name: required, 1..=200 characters.
pub fn parse_name(raw: Option<String>, errors: &mut ValidationErrors) -> Option<String> {
    match raw {
        None => {
            errors.add("name", "is required");
            None
        }
        Some(name) if name.trim().is_empty() => {
            errors.add("name", "must not be empty");
            None
        }
        Some(name) if name.chars().count() > MAX_NAME_LEN => {
            errors.add("name", "must be at most 200 characters");
            None
        }
        Some(name) => Some(name),
    }
}

/// An API key in clear: `key_` + 32 base62 characters. Exists only between generation and the
/// response that shows it once; `Debug` never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Prefix of every key.
    pub const PREFIX: &'static str = "key_";
    /// Number of random base62 characters after the prefix.
    pub const RANDOM_LEN: usize = 32;

    /// Accepts a string of the key format; `None` for anything else.
    pub fn parse(value: &str) -> Option<Self> {
        let rest = value.strip_prefix(Self::PREFIX)?;
        (rest.len() == Self::RANDOM_LEN && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
            .then(|| Self(value.to_string()))
    }

    /// The key in clear, for the one response that may show it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// The SHA-256 digest of an API key: all the server ever stores of it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyHash(pub [u8; 32]);

impl fmt::Debug for KeyHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyHash(<redacted>)")
    }
}

/// A stored application (never carries its key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Application {
    /// Identifier.
    pub id: Uuid,
    /// Owning tenant.
    pub tenant_id: Uuid,
    /// 1..=200 characters.
    pub name: String,
    /// Bounds the permissions.
    pub app_type: ApplicationType,
    /// Plain permissions, each allowed for the type.
    pub permissions: Vec<Permission>,
    /// Rules sorted by priority (none on management applications).
    pub rules: Vec<AccessRule>,
    /// The application that created it, if any.
    pub created_by: Option<Uuid>,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// The application that last changed it.
    pub modified_by: Option<Uuid>,
    /// Last change.
    pub modified_at: Option<OffsetDateTime>,
    /// When it stops working and is deleted.
    pub expires_at: Option<OffsetDateTime>,
}

impl Application {
    /// Whether the application has expired at `now`.
    pub fn is_expired(&self, now: OffsetDateTime) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
}

/// `POST /applications` as a client sent it.
#[derive(Clone, Debug, Default)]
pub struct RawNewApplication {
    /// `name`.
    pub name: Option<String>,
    /// `type`.
    pub app_type: Option<String>,
    /// `permissions`.
    pub permissions: Vec<String>,
    /// `rules`.
    pub rules: Vec<RawRule>,
    /// `expires_at`, already parsed as a date by the adapter.
    pub expires_at: Option<OffsetDateTime>,
}

/// `PUT /applications/{id}` as a client sent it.
#[derive(Clone, Debug, Default)]
pub struct RawApplicationUpdate {
    /// `name`.
    pub name: Option<String>,
    /// `permissions`.
    pub permissions: Vec<String>,
    /// `rules`.
    pub rules: Vec<RawRule>,
}

/// A validated create request.
#[derive(Clone, Debug)]
pub struct NewApplication {
    /// Name.
    pub name: String,
    /// Type.
    pub app_type: ApplicationType,
    /// Plain permissions.
    pub permissions: Vec<Permission>,
    /// Rules sorted by priority.
    pub rules: Vec<AccessRule>,
    /// Expiry in the future.
    pub expires_at: Option<OffsetDateTime>,
}

/// A validated update: what replaces name, permissions and rules.
#[derive(Clone, Debug)]
pub struct ApplicationChanges {
    /// Name.
    pub name: String,
    /// Plain permissions.
    pub permissions: Vec<Permission>,
    /// Rules sorted by priority.
    pub rules: Vec<AccessRule>,
}

fn grants(
    ty: ApplicationType,
    permissions: &[String],
    rules: Vec<RawRule>,
    errors: &mut ValidationErrors,
) -> (Vec<Permission>, Vec<AccessRule>) {
    let had_any = !permissions.is_empty() || !rules.is_empty();
    let permissions = access::parse_permissions(ty, permissions, "permissions", errors);
    let rules = access::parse_rules(access::RuleKind::Application(ty), rules, errors);
    if !had_any {
        errors.add(
            "permissions",
            "either permissions or rules must be non-empty",
        );
    }
    (permissions.unwrap_or_default(), rules)
}

impl NewApplication {
    /// Validates a create request at time `now`.
    pub fn parse(raw: RawNewApplication, now: OffsetDateTime) -> Result<Self, Error> {
        let mut errors = ValidationErrors::new();
        let name = parse_name(raw.name, &mut errors);
        let app_type = match raw.app_type.as_deref() {
            None => {
                errors.add("type", "is required");
                None
            }
            Some(t) => {
                let parsed = ApplicationType::parse(t);
                if parsed.is_none() {
                    errors.add("type", "must be one of private, public, management");
                }
                parsed
            }
        };
        if raw.expires_at.is_some_and(|at| at <= now) {
            errors.add("expires_at", "must be in the future");
        }
        let Some(app_type) = app_type else {
            return Err(Error::Validation(errors));
        };
        let (permissions, rules) = grants(app_type, &raw.permissions, raw.rules, &mut errors);
        match name {
            Some(name) if errors.is_empty() => Ok(Self {
                name,
                app_type,
                permissions,
                rules,
                expires_at: raw.expires_at,
            }),
            _ => Err(Error::Validation(errors)),
        }
    }
}

impl ApplicationChanges {
    /// Validates an update of an application of type `ty`.
    pub fn parse(raw: RawApplicationUpdate, ty: ApplicationType) -> Result<Self, Error> {
        let mut errors = ValidationErrors::new();
        let name = parse_name(raw.name, &mut errors);
        let (permissions, rules) = grants(ty, &raw.permissions, raw.rules, &mut errors);
        match name {
            Some(name) if errors.is_empty() => Ok(Self {
                name,
                permissions,
                rules,
            }),
            _ => Err(Error::Validation(errors)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::Duration;

    fn now() -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap()
    }

    fn raw(name: &str, ty: &str, perms: &[&str]) -> RawNewApplication {
        RawNewApplication {
            name: Some(name.into()),
            app_type: Some(ty.into()),
            permissions: perms.iter().map(|s| (*s).to_string()).collect(),
            ..Default::default()
        }
    }

    fn fields(err: Error) -> Vec<String> {
        match err {
            Error::Validation(v) => v.fields().keys().cloned().collect(),
            other => panic!("expected validation error, got {other:?}"),
        }
    }

    #[test]
    fn valid_application() {
        let app = NewApplication::parse(raw("a", "private", &["token:read", "token:read"]), now())
            .unwrap();
        assert_eq!(app.permissions, vec![Permission::TokenRead]);
    }

    #[test]
    fn name_bounds() {
        assert!(
            NewApplication::parse(raw(&"n".repeat(200), "private", &["token:read"]), now()).is_ok()
        );
        let long = NewApplication::parse(raw(&"n".repeat(201), "private", &["token:read"]), now());
        assert_eq!(fields(long.unwrap_err()), ["name"]);
        let empty = NewApplication::parse(raw("", "private", &["token:read"]), now());
        assert_eq!(fields(empty.unwrap_err()), ["name"]);
        let mut missing = raw("", "private", &["token:read"]);
        missing.name = None;
        assert_eq!(
            fields(NewApplication::parse(missing, now()).unwrap_err()),
            ["name"]
        );
    }

    #[test]
    fn type_and_permissions() {
        assert_eq!(
            fields(NewApplication::parse(raw("a", "root", &["token:read"]), now()).unwrap_err()),
            ["type"]
        );
        assert_eq!(
            fields(NewApplication::parse(raw("a", "public", &["token:use"]), now()).unwrap_err()),
            ["permissions.0"]
        );
        assert_eq!(
            fields(NewApplication::parse(raw("a", "private", &[]), now()).unwrap_err()),
            ["permissions"]
        );
    }

    #[test]
    fn expiry_must_be_future() {
        let mut past = raw("a", "private", &["token:read"]);
        past.expires_at = Some(now() - Duration::seconds(1));
        assert_eq!(
            fields(NewApplication::parse(past, now()).unwrap_err()),
            ["expires_at"]
        );
        let mut future = raw("a", "private", &["token:read"]);
        future.expires_at = Some(now() + Duration::seconds(1));
        assert!(NewApplication::parse(future, now()).is_ok());
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let mut r = raw(&"x".repeat(201), "private", &["application:create"]);
        r.expires_at = Some(now());
        let f = fields(NewApplication::parse(r, now()).unwrap_err());
        assert_eq!(f, ["expires_at", "name", "permissions.0"]);
    }

    #[test]
    fn api_key_format_and_debug() {
        let key = ApiKey::parse("key_0123456789abcdefghijABCDEFGHIJkl").unwrap();
        assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
        assert!(ApiKey::parse("key_short").is_none());
        assert!(ApiKey::parse("kex_0123456789abcdefghijABCDEFGHIJkl").is_none());
        assert!(ApiKey::parse("key_0123456789abcdefghijABCDEFGHIJk!").is_none());
    }
}
