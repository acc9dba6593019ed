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
    ($($variant:ident => $name:literal, [$($ty:ident),+];)+) => {
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
    TokenCreate => "token:create", [Public, Private];
    TokenUpdate => "token:update", [Public, Private];
    TokenRead => "token:read", [Private];
    TokenSearch => "token:search", [Private];
    TokenDelete => "token:delete", [Private];
    TokenUse => "token:use", [Private];
    ApplicationCreate => "application:create", [Management];
    ApplicationRead => "application:read", [Management];
    ApplicationUpdate => "application:update", [Management];
    ApplicationDelete => "application:delete", [Management];
    ProxyCreate => "proxy:create", [Management];
    ProxyRead => "proxy:read", [Management];
    ProxyUpdate => "proxy:update", [Management];
    ProxyDelete => "proxy:delete", [Management];
    ReactorCreate => "reactor:create", [Management];
    ReactorRead => "reactor:read", [Management];
    ReactorUpdate => "reactor:update", [Management];
    ReactorDelete => "reactor:delete", [Management];
    TenantRead => "tenant:read", [Management];
    TenantUpdate => "tenant:update", [Management];
    TenantDelete => "tenant:delete", [Management];
    ReportRead => "report:read", [Management];
    LogRead => "log:read", [Management];
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
