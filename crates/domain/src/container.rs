//! Containers: path-like names (`/pci/high/`) that scope tokens and access rules (docs/decisions.md §4).

use std::fmt;

/// A validated, lower-cased container path. `/` is the root; a container covers every container
/// whose path it prefixes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Container(String);

impl Container {
    /// The longest container accepted.
    pub const MAX_LEN: usize = 400;

    /// Validates and normalises (lower-cases) a container path.
    pub fn parse(value: &str) -> Result<Self, &'static str> {
        let lower = value.to_ascii_lowercase();
        if lower.len() > Self::MAX_LEN {
            return Err("must be at most 400 characters");
        }
        if !lower.starts_with('/') || !lower.ends_with('/') {
            return Err("must start and end with '/'");
        }
        if lower == "/" {
            return Ok(Self(lower));
        }
        let inner = &lower[1..lower.len() - 1];
        for segment in inner.split('/') {
            if segment.is_empty() {
                return Err("must not contain '//'");
            }
            if !segment
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
            {
                return Err("segments may only contain a-z, 0-9, '_' and '-'");
            }
        }
        Ok(Self(lower))
    }

    /// The path as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this container is `other` or one of its ancestors (path prefix).
    pub fn covers(&self, other: &Container) -> bool {
        other.0.starts_with(&self.0)
    }
}

impl fmt::Display for Container {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_and_normalises() {
        assert_eq!(Container::parse("/").unwrap().as_str(), "/");
        assert_eq!(
            Container::parse("/PCI/High/").unwrap().as_str(),
            "/pci/high/"
        );
        assert!(Container::parse("/a_b-1/c/").is_ok());
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            "pci/",
            "/pci",
            "/pci//high/",
            "//",
            "/p ci/",
            "/pçi/",
            "/a.b/",
        ] {
            assert!(Container::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn prefix_covers_descendants_only() {
        let pci = Container::parse("/pci/").unwrap();
        assert!(pci.covers(&Container::parse("/pci/high/").unwrap()));
        assert!(pci.covers(&pci));
        assert!(!pci.covers(&Container::parse("/pcix/").unwrap()));
        assert!(Container::parse("/").unwrap().covers(&pci));
        assert!(!Container::parse("/pci/high/").unwrap().covers(&pci));
    }

    proptest! {
        #[test]
        fn valid_paths_round_trip(segments in proptest::collection::vec("[a-z0-9_-]{1,8}", 0..5)) {
            let path = if segments.is_empty() { "/".to_string() } else { format!("/{}/", segments.join("/")) };
            let parsed = Container::parse(&path).unwrap();
            prop_assert_eq!(parsed.as_str(), path.as_str());
            prop_assert!(Container::parse("/").unwrap().covers(&parsed));
        }

        #[test]
        fn child_is_covered_by_parent(parent in proptest::collection::vec("[a-z0-9]{1,6}", 0..4), child in "[a-z0-9]{1,6}") {
            let base = if parent.is_empty() { "/".to_string() } else { format!("/{}/", parent.join("/")) };
            let p = Container::parse(&base).unwrap();
            let c = Container::parse(&format!("{base}{child}/")).unwrap();
            prop_assert!(p.covers(&c));
            prop_assert!(!c.covers(&p));
        }

        #[test]
        fn never_panics(input in ".{0,40}") {
            let _ = Container::parse(&input);
        }
    }
}
