//! A token's privacy settings as Basis Theory's clients read them (docs/decisions.md §12):
//! derived from the token, never set by a caller.

use crate::container::Container;
use crate::token::Token;

/// What a token's privacy says: where it is classified and what a read without `reveal` shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Privacy {
    /// The first segment of a `/<classification>/<impact_level>/` container, else `general`.
    pub classification: String,
    /// The second segment of such a container, else `high`.
    pub impact_level: String,
    /// `mask` when the token has a mask (its own or its type's), else `redact`.
    pub restriction_policy: &'static str,
}

impl Privacy {
    /// The privacy of `token`.
    pub fn of(token: &Token) -> Self {
        let has_mask = token.mask.is_some() || token.token_type.default_mask().is_some();
        let (classification, impact_level) =
            levels(&token.container).unwrap_or_else(|| ("general".to_string(), "high".to_string()));
        Self {
            classification,
            impact_level,
            restriction_policy: if has_mask { "mask" } else { "redact" },
        }
    }
}

/// The two segments of a container of exactly two (`/pci/high/` → `pci`, `high`).
fn levels(container: &Container) -> Option<(String, String)> {
    let inner = container.as_str().strip_prefix('/')?.strip_suffix('/')?;
    let (first, second) = inner.split_once('/')?;
    (!first.is_empty() && !second.is_empty() && !second.contains('/'))
        .then(|| (first.to_string(), second.to_string()))
}

#[cfg(test)]
mod tests {
    use super::levels;
    use crate::container::Container;

    fn of(path: &str) -> Option<(String, String)> {
        levels(&Container::parse(path).unwrap())
    }

    #[test]
    fn only_a_two_segment_container_classifies() {
        assert_eq!(of("/pci/high/"), Some(("pci".into(), "high".into())));
        assert_eq!(of("/pii/low/"), Some(("pii".into(), "low".into())));
        assert_eq!(of("/"), None);
        assert_eq!(of("/general/"), None);
        assert_eq!(of("/a/b/c/"), None);
    }
}
