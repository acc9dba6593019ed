//! Pagination (docs/decisions.md §3): `page` ≥ 1 (default 1), `size` 1..=100 (default 20).

use crate::error::{Error, ValidationErrors};

/// A validated page request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageRequest {
    /// 1-based page number.
    pub page: u64,
    /// Items per page.
    pub size: u64,
}

impl Default for PageRequest {
    fn default() -> Self {
        Self { page: 1, size: 20 }
    }
}

impl PageRequest {
    /// The largest page size.
    pub const MAX_SIZE: u64 = 100;

    /// Parses the raw query values; each bad one is named in the error.
    pub fn parse(page: Option<&str>, size: Option<&str>) -> Result<Self, Error> {
        let mut errors = ValidationErrors::new();
        let mut out = Self::default();
        if let Some(p) = page {
            match p.parse::<u64>() {
                Ok(n) if n >= 1 && u32::try_from(n).is_ok() => out.page = n,
                _ => errors.add("page", "must be an integer of at least 1"),
            }
        }
        if let Some(s) = size {
            match s.parse::<u64>() {
                Ok(n) if (1..=Self::MAX_SIZE).contains(&n) => out.size = n,
                _ => errors.add("size", "must be an integer from 1 to 100"),
            }
        }
        errors.into_result(out)
    }

    /// Rows to skip.
    pub fn offset(self) -> u64 {
        (self.page - 1) * self.size
    }
}

/// One page of a list, with the total over all pages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page<T> {
    /// The items of this page.
    pub items: Vec<T>,
    /// Items over all pages.
    pub total_items: u64,
    /// The request that produced it.
    pub request: PageRequest,
}

impl<T> Page<T> {
    /// Number of pages (0 for an empty list).
    pub fn total_pages(&self) -> u64 {
        self.total_items.div_ceil(self.request.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        assert_eq!(
            PageRequest::parse(None, None).unwrap(),
            PageRequest { page: 1, size: 20 }
        );
        assert_eq!(
            PageRequest::parse(Some("3"), Some("100")).unwrap().offset(),
            200
        );
        for (p, s) in [
            (Some("0"), None),
            (None, Some("0")),
            (None, Some("101")),
            (Some("x"), None),
            (Some("-1"), None),
        ] {
            assert!(PageRequest::parse(p, s).is_err(), "{p:?} {s:?}");
        }
    }

    #[test]
    fn total_pages() {
        let page = |total| Page::<()> {
            items: vec![],
            total_items: total,
            request: PageRequest { page: 1, size: 2 },
        };
        assert_eq!(page(0).total_pages(), 0);
        assert_eq!(page(5).total_pages(), 3);
        assert_eq!(page(4).total_pages(), 2);
    }
}
