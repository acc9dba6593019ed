//! Sessions (docs/decisions.md §4, sessions): a public application starts one and gets a key and
//! a nonce; a private application authorizes the nonce with permissions or condition rules it
//! holds itself; the key then acts with those, for a short time.

use std::fmt;

use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use crate::access::{self, AccessRule, RawRule, RuleKind};
use crate::error::ValidationErrors;
use crate::permission::{ApplicationType, Permission};

/// How long a session lives when its authorization names no `expires_at`: counted from its
/// creation, and shown in the creation's response.
pub const DEFAULT_LIFETIME: Duration = Duration::minutes(3);

/// The longest a session may live, counted from its authorization.
pub const MAX_LIFETIME: Duration = Duration::hours(1);

/// The single-use secret that lets a private application authorize a session: 32 base62
/// characters. `Debug` never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct Nonce(String);

impl Nonce {
    /// Number of base62 characters.
    pub const LEN: usize = 32;

    /// Accepts a string of the nonce format; `None` for anything else.
    pub fn parse(value: &str) -> Option<Self> {
        (value.len() == Self::LEN && value.bytes().all(|b| b.is_ascii_alphanumeric()))
            .then(|| Self(value.to_string()))
    }

    /// The nonce in clear, for the one response that shows it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Nonce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Nonce(<redacted>)")
    }
}

/// A stored session (never carries its key or nonce).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    /// Identifier; also what the session acts as (`created_by`, rate limits, idempotency).
    pub id: Uuid,
    /// Owning tenant.
    pub tenant_id: Uuid,
    /// The public application that started it.
    pub created_by: Uuid,
    /// The private application that authorized it; `None` until then (the key is refused).
    pub authorized_by: Option<Uuid>,
    /// Plain token permissions granted.
    pub permissions: Vec<Permission>,
    /// Condition rules granted, by priority.
    pub rules: Vec<AccessRule>,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// After this the key is refused and the nonce is useless.
    pub expires_at: OffsetDateTime,
}

/// What an authorization grants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionGrant {
    /// Plain token permissions.
    pub permissions: Vec<Permission>,
    /// Condition rules, by priority.
    pub rules: Vec<AccessRule>,
    /// A new end of life; `None` keeps the one shown at creation.
    pub expires_at: Option<OffsetDateTime>,
}

/// `POST /sessions/authorize` as a client sent it.
#[derive(Clone, Debug, Default)]
pub struct RawSessionGrant {
    /// `nonce`.
    pub nonce: Option<String>,
    /// `permissions`.
    pub permissions: Option<Vec<String>>,
    /// `rules`.
    pub rules: Option<Vec<RawRule>>,
    /// `expires_at`.
    pub expires_at: Option<OffsetDateTime>,
}

impl SessionGrant {
    /// Validates an authorization at `now`: the nonce's format, token permissions only, rules
    /// with conditions, and an `expires_at` in `(now, now + 1 h]`. Every problem is named.
    pub fn parse(
        raw: RawSessionGrant,
        now: OffsetDateTime,
    ) -> Result<(Nonce, Self), ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let nonce = match raw.nonce.as_deref() {
            None => {
                errors.add("nonce", "is required");
                None
            }
            Some(n) => {
                let parsed = Nonce::parse(n);
                if parsed.is_none() {
                    errors.add("nonce", "is not a valid session nonce");
                }
                parsed
            }
        };
        let raw_permissions = raw.permissions.unwrap_or_default();
        let raw_rules = raw.rules.unwrap_or_default();
        if raw_permissions.is_empty() && raw_rules.is_empty() {
            errors.add(
                "permissions",
                "either permissions or rules must be non-empty",
            );
        }
        let permissions = access::parse_permissions(
            ApplicationType::Private,
            &raw_permissions,
            "permissions",
            &mut errors,
        );
        let rules = access::parse_rules(RuleKind::Session, raw_rules, &mut errors);
        if let Some(at) = raw.expires_at {
            if at <= now {
                errors.add("expires_at", "must be in the future");
            } else if at > now + MAX_LIFETIME {
                errors.add("expires_at", "must be at most 1 hour from now");
            }
        }
        match (errors.is_empty(), nonce, permissions) {
            (true, Some(nonce), Some(permissions)) => Ok((
                nonce,
                Self {
                    permissions,
                    rules,
                    expires_at: raw.expires_at,
                },
            )),
            _ => Err(errors),
        }
    }

    /// Every permission the grant names, plainly or in a rule.
    pub fn named_permissions(&self) -> impl Iterator<Item = Permission> + '_ {
        self.permissions
            .iter()
            .chain(self.rules.iter().flat_map(|r| r.permissions.iter()))
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::RawCondition;

    fn nonce() -> String {
        "a".repeat(Nonce::LEN)
    }

    fn now() -> OffsetDateTime {
        OffsetDateTime::UNIX_EPOCH + Duration::days(20_000)
    }

    #[test]
    fn lifetime_is_at_most_an_hour_and_in_the_future() {
        let grant = |at| RawSessionGrant {
            nonce: Some(nonce()),
            permissions: Some(vec!["token:read".into()]),
            rules: None,
            expires_at: Some(at),
        };
        assert!(SessionGrant::parse(grant(now() + Duration::hours(1)), now()).is_ok());
        for at in [now(), now() + Duration::hours(1) + Duration::seconds(1)] {
            let errors = SessionGrant::parse(grant(at), now()).unwrap_err();
            assert!(errors.contains("expires_at"), "{errors:?}");
        }
    }

    #[test]
    fn token_permissions_and_condition_rules_only() {
        let raw = RawSessionGrant {
            nonce: Some("short".into()),
            permissions: Some(vec!["application:create".into()]),
            rules: Some(vec![RawRule {
                priority: Some(1),
                container: Some("/".into()),
                transform: Some("reveal".into()),
                permissions: Some(vec!["token:read".into()]),
                ..RawRule::default()
            }]),
            expires_at: None,
        };
        let errors = SessionGrant::parse(raw, now()).unwrap_err();
        for field in [
            "nonce",
            "permissions.0",
            "rules.0.container",
            "rules.0.conditions",
        ] {
            assert!(errors.contains(field), "{field} missing from {errors:?}");
        }
        let empty = RawSessionGrant {
            nonce: Some(nonce()),
            ..RawSessionGrant::default()
        };
        assert!(
            SessionGrant::parse(empty, now())
                .unwrap_err()
                .contains("permissions")
        );
    }

    #[test]
    fn named_permissions_cover_plain_and_rules() {
        let raw = RawSessionGrant {
            nonce: Some(nonce()),
            permissions: Some(vec!["token:use".into()]),
            rules: Some(vec![RawRule {
                priority: Some(1),
                conditions: Some(vec![RawCondition {
                    attribute: Some("id".into()),
                    operator: Some("equals".into()),
                    value: Some("t".into()),
                }]),
                transform: Some("reveal".into()),
                permissions: Some(vec!["token:read".into()]),
                ..RawRule::default()
            }]),
            expires_at: None,
        };
        let (_, grant) = SessionGrant::parse(raw, now()).unwrap();
        let named: Vec<_> = grant.named_permissions().collect();
        assert_eq!(named, [Permission::TokenUse, Permission::TokenRead]);
    }
}
