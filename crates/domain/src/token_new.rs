//! A new token: the create request as a client sent it ([`RawNewToken`]) and its validated
//! form ([`NewToken`]), one per `POST /tokens` or tokenize object.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;
use time::OffsetDateTime;

use crate::container::Container;
use crate::error::ValidationErrors;
use crate::mask::check_mask;
use crate::search_index::{default_search_indexes, parse_search_indexes};
use crate::token::{
    MAX_EXPRESSION_LEN, check_data_size, check_literal_id, check_metadata, is_expression,
    parse_containers, parse_time, redacted,
};
use crate::token_type::TokenType;

/// `POST /tokens` (and each tokenize object) as a client sent it.
#[derive(Clone, Default)]
pub struct RawNewToken {
    /// `type`.
    pub token_type: Option<String>,
    /// `data`: `None` when absent; `Some(Value::Null)` when null.
    pub data: Option<Value>,
    /// `id`: literal or alias expression.
    pub id: Option<String>,
    /// `containers`.
    pub containers: Option<Vec<String>>,
    /// `metadata`.
    pub metadata: Option<BTreeMap<String, String>>,
    /// `mask`.
    pub mask: Option<Value>,
    /// `fingerprint_expression`.
    pub fingerprint_expression: Option<String>,
    /// `deduplicate_token`.
    pub deduplicate_token: Option<bool>,
    /// `expires_at`, parsed by the adapter.
    pub expires_at: Option<OffsetDateTime>,
    /// `search_indexes` as given (`None`: absent or null, the type's defaults apply).
    pub search_indexes: Option<Value>,
}

impl RawNewToken {
    /// Reads a create request from a JSON object, naming each field of the wrong type. `data`
    /// keeps the distinction between absent (`None`) and null (`Some(Null)`).
    pub fn from_object(map: &serde_json::Map<String, Value>) -> Result<Self, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let mut string = |k: &str| -> Option<String> {
            match map.get(k) {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => {
                    errors.add(k, "must be a string");
                    None
                }
            }
        };
        let token_type = string("type");
        let id = string("id");
        let fingerprint_expression = string("fingerprint_expression");
        let expires_raw = string("expires_at");
        let containers = match map.get("containers") {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => {
                let names: Option<Vec<String>> = items
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect();
                if names.is_none() {
                    errors.add("containers", "must be an array of strings");
                }
                names
            }
            Some(_) => {
                errors.add("containers", "must be an array of strings");
                None
            }
        };
        let metadata = match map.get("metadata") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => {
                let mut out = BTreeMap::new();
                for (k, v) in m {
                    match v.as_str() {
                        Some(s) => {
                            out.insert(k.clone(), s.to_owned());
                        }
                        None => errors.add(format!("metadata.{k}"), "must be a string"),
                    }
                }
                Some(out)
            }
            Some(_) => {
                errors.add("metadata", "must be an object of strings");
                None
            }
        };
        let deduplicate_token = match map.get("deduplicate_token") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => {
                errors.add("deduplicate_token", "must be a boolean");
                None
            }
        };
        let expires_at = expires_raw.and_then(|s| {
            let parsed = parse_time(&s);
            if parsed.is_none() {
                errors.add("expires_at", "must be an RFC 3339 date");
            }
            parsed
        });
        let raw = Self {
            token_type,
            data: map.get("data").cloned(),
            id,
            containers,
            metadata,
            mask: map.get("mask").cloned(),
            fingerprint_expression,
            deduplicate_token,
            expires_at,
            search_indexes: map.get("search_indexes").cloned(),
        };
        errors.into_result(raw).map_err(|e| match e {
            crate::Error::Validation(v) => v,
            _ => ValidationErrors::new(),
        })
    }
}

/// How the id of a new token is chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdSpec {
    /// A UUIDv7 of the creation time with 74 random bits (`generated_id`).
    Generated,
    /// Exactly this id.
    Literal(String),
    /// An expression over the data (alias filters), rendered at creation.
    Expression(String),
}

/// A validated create request (expressions not yet checked: that needs the engine).
#[derive(Clone)]
pub struct NewToken {
    /// Type.
    pub token_type: TokenType,
    /// Data.
    pub data: Value,
    /// Id choice.
    pub id: IdSpec,
    /// Container.
    pub container: Container,
    /// Metadata.
    pub metadata: BTreeMap<String, String>,
    /// Own mask.
    pub mask: Option<Value>,
    /// Own fingerprint expression.
    pub fingerprint_expression: Option<String>,
    /// Per-token deduplication override.
    pub deduplicate: Option<bool>,
    /// Expiry.
    pub expires_at: Option<OffsetDateTime>,
    /// Search index expressions (the type's defaults when the request named none).
    pub search_indexes: Vec<String>,
}

impl NewToken {
    /// Validates the request's shape and the data of its type, at time `now`.
    pub fn parse(raw: RawNewToken, now: OffsetDateTime) -> Result<Self, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let token_type = match raw.token_type.as_deref() {
            None => {
                errors.add("type", "is required");
                None
            }
            Some(t) => {
                let parsed = TokenType::parse(t);
                if parsed.is_none() {
                    errors.add("type", "is not a known token type");
                }
                parsed
            }
        };
        let data = match raw.data {
            None => {
                errors.add("data", "is required");
                None
            }
            Some(Value::Null) => {
                errors.add("data", "must not be null");
                None
            }
            Some(d) => Some(d),
        };
        if let (Some(t), Some(d)) = (token_type, data.as_ref()) {
            t.validate(d, &mut errors);
            check_data_size(d, &mut errors);
        }
        let id = match raw.id {
            None => IdSpec::Generated,
            Some(id) if is_expression(&id) => {
                if id.len() > MAX_EXPRESSION_LEN {
                    errors.add("id", "expression is too long");
                }
                IdSpec::Expression(id)
            }
            Some(id) => {
                if let Err(m) = check_literal_id(&id) {
                    errors.add("id", m);
                }
                IdSpec::Literal(id)
            }
        };
        let container = parse_containers(
            raw.containers.as_deref(),
            token_type.map_or("/", TokenType::default_container),
            &mut errors,
        );
        let metadata = raw.metadata.unwrap_or_default();
        check_metadata(&metadata, &mut errors);
        let mask = raw.mask.filter(|m| !m.is_null());
        if let Some(m) = &mask {
            check_mask(m, &mut errors);
        }
        if raw
            .fingerprint_expression
            .as_ref()
            .is_some_and(|e| e.is_empty() || e.len() > MAX_EXPRESSION_LEN)
        {
            errors.add("fingerprint_expression", "must be 1 to 4096 characters");
        }
        if raw.expires_at.is_some_and(|at| at <= now) {
            errors.add("expires_at", "must be in the future");
        }
        let search_indexes = raw
            .search_indexes
            .as_ref()
            .and_then(|v| parse_search_indexes(v, &mut errors));
        match (token_type, data, container) {
            (Some(token_type), Some(data), Some(container)) if errors.is_empty() => Ok(Self {
                token_type,
                data,
                id,
                container,
                metadata,
                mask,
                fingerprint_expression: raw.fingerprint_expression,
                deduplicate: raw.deduplicate_token,
                expires_at: raw.expires_at,
                search_indexes: search_indexes
                    .unwrap_or_else(|| default_search_indexes(token_type)),
            }),
            _ => Err(errors),
        }
    }
}

impl fmt::Debug for RawNewToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawNewToken")
            .field("type", &self.token_type)
            .field("data", &redacted(self.data.as_ref()))
            .field("containers", &self.containers)
            .field("mask", &redacted(self.mask.as_ref()))
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for NewToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewToken")
            .field("type", &self.token_type)
            .field("data", &"<redacted>")
            .field("container", &self.container)
            .field("mask", &redacted(self.mask.as_ref()))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::{FORBIDDEN_ID_CHARS, RawTokenPatch, Token};
    use serde_json::json;
    use uuid::Uuid;

    fn now() -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap()
    }

    fn raw(t: &str, data: Value) -> RawNewToken {
        RawNewToken {
            token_type: Some(t.into()),
            data: Some(data),
            ..Default::default()
        }
    }

    #[test]
    fn defaults_from_the_type() {
        let t = NewToken::parse(raw("card_number", json!("4242424242424242")), now()).unwrap();
        assert_eq!(t.container.as_str(), "/pci/high/");
        assert_eq!(t.id, IdSpec::Generated);
    }

    #[test]
    fn each_problem_named() {
        let mut r = raw("token", Value::Null);
        r.containers = Some(vec!["/a/".into(), "/b/".into()]);
        r.id = Some("a/b".into());
        r.mask = Some(json!(5));
        r.expires_at = Some(now());
        let e = NewToken::parse(r, now()).unwrap_err();
        for f in ["data", "containers", "id", "mask", "expires_at"] {
            assert!(e.contains(f), "{f}: {e:?}");
        }
        let e = NewToken::parse(RawNewToken::default(), now()).unwrap_err();
        assert!(e.contains("type") && e.contains("data"));
    }

    #[test]
    fn literal_ids() {
        assert!(check_literal_id("abc").is_ok());
        assert!(check_literal_id("ab").is_err());
        assert!(check_literal_id(&"a".repeat(401)).is_err());
        for c in FORBIDDEN_ID_CHARS.chars() {
            assert!(check_literal_id(&format!("ab{c}cd")).is_err(), "{c}");
        }
        let t = NewToken::parse(
            RawNewToken {
                id: Some("{{ data | alias_preserve_format }}".into()),
                ..raw("token", json!("x"))
            },
            now(),
        )
        .unwrap();
        assert!(matches!(t.id, IdSpec::Expression(_)));
    }

    #[test]
    fn debug_hides_data() {
        let t = Token {
            id: "t".into(),
            tenant_id: Uuid::nil(),
            token_type: TokenType::Token,
            data: json!("super-secret"),
            container: Container::parse("/").unwrap(),
            metadata: BTreeMap::new(),
            mask: None,
            fingerprint: None,
            fingerprint_expression: None,
            created_by: None,
            created_at: now(),
            modified_by: None,
            modified_at: None,
            expires_at: None,
            deduplicate: None,
            search_indexes: vec![],
            search_terms: vec![],
            version: 0,
        };
        assert!(!format!("{t:?}").contains("super-secret"));
        let raw = raw("token", json!("super-secret"));
        assert!(!format!("{raw:?}").contains("super-secret"));
        let new = NewToken::parse(raw, now()).unwrap();
        assert!(!format!("{new:?}").contains("super-secret"));
        let patch = RawTokenPatch {
            data: Some(json!("super-secret")),
            mask: Some(json!("super-secret")),
            ..RawTokenPatch::default()
        };
        assert!(!format!("{patch:?}").contains("super-secret"));
    }
}
