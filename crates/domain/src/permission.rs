//! Permissions, application types, and which type may hold which permission (docs/decisions.md §4).

use std::fmt;

/// The type of an application; it bounds the permissions the application may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ApplicationType {
    /// Backend services that keep their key secret: tokenize, read, use.
    Private,
    /// Browsers and mobile apps: create and update tokens only.
    Public,
    /// Infrastructure management: applications, proxies, reactors, the tenant.
    Management,
}

impl ApplicationType {
    /// Every type, in a fixed order.
    pub const ALL: [ApplicationType; 3] = [Self::Private, Self::Public, Self::Management];

    /// Parses the wire name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "private" => Some(Self::Private),
            "public" => Some(Self::Public),
            "management" => Some(Self::Management),
            _ => None,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Private => "private",
            Self::Public => "public",
            Self::Management => "management",
        }
    }
}

impl fmt::Display for ApplicationType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! permissions {
    ($($variant:ident => $name:literal, [$($ty:ident),+], $description:literal;)+) => {
        /// A permission an application (or one of its rules) can grant.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Permission {
            $(
                #[doc = concat!("`", $name, "`")]
                $variant,
            )+
        }

        impl Permission {
            /// Every permission, in a fixed order.
            pub const ALL: &'static [Permission] = &[$(Permission::$variant),+];

            /// The wire name (`token:read`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Permission::$variant => $name,)+
                }
            }

            /// Parses a wire name.
            pub fn parse(value: &str) -> Option<Self> {
                match value {
                    $($name => Some(Permission::$variant),)+
                    _ => None,
                }
            }

            /// What holding it allows, in one sentence (`GET /permissions`).
            pub fn description(self) -> &'static str {
                match self {
                    $(Permission::$variant => $description,)+
                }
            }

            /// The application types that may hold it, in the order `private`, `public`,
            /// `management`.
            pub fn application_types(self) -> Vec<ApplicationType> {
                ApplicationType::ALL.into_iter().filter(|t| self.allowed_for(*t)).collect()
            }

            /// Whether an application of `ty` may hold this permission (docs/decisions.md §4 table).
            pub fn allowed_for(self, ty: ApplicationType) -> bool {
                match self {
                    $(Permission::$variant => matches!(ty, $(ApplicationType::$ty)|+),)+
                }
            }
        }
    };
}

permissions! {
    TokenCreate => "token:create", [Public, Private], "Create tokens (POST /tokens, /tokenize, children)";
    TokenUpdate => "token:update", [Public, Private], "Update tokens (PATCH /tokens/{id})";
    TokenRead => "token:read", [Private], "Read tokens and their data under the rule's transform, list them, detokenize";
    TokenSearch => "token:search", [Private], "Search tokens (POST /tokens/search)";
    TokenDelete => "token:delete", [Private], "Delete tokens and their associations";
    TokenUse => "token:use", [Private], "Use token data in reactors and proxies without seeing it";
    ApplicationCreate => "application:create", [Management], "Create applications";
    ApplicationRead => "application:read", [Management], "Read applications";
    ApplicationUpdate => "application:update", [Management], "Update applications and regenerate their keys";
    ApplicationDelete => "application:delete", [Management], "Delete applications";
    ProxyCreate => "proxy:create", [Management], "Create proxies";
    ProxyRead => "proxy:read", [Management], "Read proxies";
    ProxyUpdate => "proxy:update", [Management], "Update proxies";
    ProxyDelete => "proxy:delete", [Management], "Delete proxies";
    ReactorCreate => "reactor:create", [Management], "Create reactors and reactor formulas";
    ReactorRead => "reactor:read", [Management], "Read reactors and reactor formulas";
    ReactorUpdate => "reactor:update", [Management], "Update reactors and reactor formulas";
    ReactorDelete => "reactor:delete", [Management], "Delete reactors and reactor formulas";
    TenantRead => "tenant:read", [Management], "Read the tenant";
    TenantUpdate => "tenant:update", [Management], "Update the tenant's name and settings";
    TenantDelete => "tenant:delete", [Management], "Delete the tenant and everything in it";
    ReportRead => "report:read", [Management], "Read the tenant's usage report";
    LogRead => "log:read", [Management], "Read the audit log";
}

impl Permission {
    /// Every permission a management application may hold (what the bootstrap application gets).
    pub fn management() -> Vec<Permission> {
        Self::ALL
            .iter()
            .copied()
            .filter(|p| p.allowed_for(ApplicationType::Management))
            .collect()
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in Permission::ALL {
            assert_eq!(Permission::parse(p.as_str()), Some(*p));
        }
        assert_eq!(Permission::parse("token:teleport"), None);
        assert_eq!(Permission::ALL.len(), 23);
    }

    #[test]
    fn matrix_follows_decisions_table() {
        use ApplicationType::{Management, Private, Public};
        let allowed = |name: &str, ty| Permission::parse(name).unwrap().allowed_for(ty);
        assert!(allowed("token:create", Public));
        assert!(allowed("token:update", Public));
        assert!(!allowed("token:read", Public));
        assert!(!allowed("token:use", Public));
        assert!(allowed("token:use", Private));
        assert!(allowed("token:search", Private));
        assert!(!allowed("token:create", Management));
        assert!(!allowed("application:create", Private));
        assert!(!allowed("log:read", Private));
        assert!(allowed("log:read", Management));
        assert_eq!(Permission::management().len(), 17);
    }
}
