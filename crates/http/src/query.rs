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

/// The parameters of a management list (applications, proxies, reactor formulas, reactors):
/// `id` (repeatable, UUIDs), `name` (contains, any case; empty is none), `page` and `size`;
/// a bad value is a 400 naming its parameter. Read by the handler once its caller is known
/// (`ListQuery::read`), never as an extractor of its own: actix extracts a handler's
/// arguments together, and a 400 must not answer before the key's 401 or the rate limit's 429.
pub struct ListQuery {
    /// Only these ids (none: all).
    pub ids: Vec<Uuid>,
    /// Only names containing this.
    pub name: Option<String>,
    /// The page.
    pub page: PageRequest,
}

impl ListQuery {
    /// `query`'s list parameters.
    ///
    /// # Errors
    /// A bad `id`, `page` or `size` (400 naming it).
    pub fn read(query: &QueryParams) -> Result<Self, ApiError> {
        Ok(Self {
            ids: query.uuids("id")?,
            name: query
                .first("name")
                .filter(|n| !n.is_empty())
                .map(str::to_string),
            page: query.page()?,
        })
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

    #[test]
    fn a_list_query_reads_ids_name_and_page_and_names_a_bad_one() {
        let id = Uuid::now_v7();
        let q = ListQuery::read(&QueryParams::parse(&format!("id={id}&name=&page=2&size=5")))
            .unwrap_or_else(|_| panic!("a good list query"));
        assert_eq!(q.ids, vec![id]);
        assert_eq!(q.name, None, "an empty name filters nothing");
        assert_eq!((q.page.page, q.page.size), (2, 5));
        let q = ListQuery::read(&QueryParams::parse("name=Pay")).unwrap_or_else(|_| panic!("name"));
        assert_eq!(q.name.as_deref(), Some("Pay"));
        for (query, field) in [("id=x", "id"), ("size=0", "size"), ("page=-1", "page")] {
            let Err(err) = ListQuery::read(&QueryParams::parse(query)) else {
                panic!("{query} accepted");
            };
            assert!(err.problem_body()["errors"].get(field).is_some(), "{query}");
        }
    }
}
