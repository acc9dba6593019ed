//! Request parameters: the query string as name → values, and UUID path parameters; a bad
//! value is a 400 naming its parameter.

use std::collections::BTreeMap;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use tokenvault_domain::ValidationErrors;
use tokenvault_domain::page::PageRequest;
use uuid::Uuid;

use crate::problem::ApiError;

/// The query string as name → values (repeated names keep every value; `id[]` is `id`).
pub struct QueryParams(BTreeMap<String, Vec<String>>);

impl QueryParams {
    /// Parses a raw query string.
    pub fn parse(query: &str) -> Self {
        let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            let key = k.strip_suffix("[]").unwrap_or(&k).to_string();
            map.entry(key).or_default().push(v.into_owned());
        }
        Self(map)
    }

    /// The first value of `name`.
    pub fn first(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(|v| v.first()).map(String::as_str)
    }

    /// Every name with its values.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_slice()))
    }

    /// Every value of `name`.
    pub fn all(&self, name: &str) -> &[String] {
        self.0.get(name).map_or(&[], Vec::as_slice)
    }

    /// `page` and `size` (docs/decisions.md §3).
    pub fn page(&self) -> Result<PageRequest, ApiError> {
        Ok(PageRequest::parse(self.first("page"), self.first("size"))?)
    }

    /// Every value of `name` as a UUID; a bad one is a 400 naming `name`.
    pub fn uuids(&self, name: &str) -> Result<Vec<Uuid>, ApiError> {
        let mut errors = ValidationErrors::new();
        let ids = self
            .all(name)
            .iter()
            .filter_map(|v| {
                let parsed = Uuid::parse_str(v).ok();
                if parsed.is_none() {
                    errors.add(name, "must be a UUID");
                }
                parsed
            })
            .collect();
        if errors.is_empty() {
            Ok(ids)
        } else {
            Err(ApiError::validation(&errors))
        }
    }
}

impl FromRequest for QueryParams {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(Ok(Self::parse(req.query_string())))
    }
}

/// Parses a path parameter that the interface declares as a UUID (400 naming it otherwise).
pub fn path_uuid(name: &str, raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| ApiError::invalid(name, "must be a UUID"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_query_parameters() {
        let q = QueryParams::parse("id=a&id%5B%5D=b&page=2");
        assert_eq!(q.all("id"), ["a", "b"]);
        assert_eq!(q.first("page"), Some("2"));
        assert!(q.uuids("id").is_err());
    }
}
