//! `PATCH /tokens/{id}` as a pure value: [`TokenPatch::parse`] validates what a client sent,
//! [`TokenPatch::apply`] merges it into a token (docs/decisions.md §6, RFC 7386).

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use time::OffsetDateTime;

use crate::container::Container;
use crate::error::ValidationErrors;
use crate::mask::check_mask;
use crate::search_index::parse_search_indexes;
use crate::token::{
    MAX_EXPRESSION_LEN, RawTokenPatch, Token, check_metadata, parse_containers, parse_time,
};
use crate::token_type::TokenType;

/// A validated merge patch of a token. `None` fields are left as they are; `Some(None)` removes.
#[derive(Clone, Default, PartialEq)]
pub struct TokenPatch {
    /// A JSON merge patch of `data` (never null).
    pub data: Option<Value>,
    /// Metadata changes: `None` values remove a key.
    pub metadata: Option<MetadataPatch>,
    /// The container to move to.
    pub container: Option<Container>,
    /// The token's own mask.
    pub mask: Option<Option<Value>>,
    /// The token's own fingerprint expression.
    pub fingerprint_expression: Option<Option<String>>,
    /// Expiry.
    pub expires_at: Option<Option<OffsetDateTime>>,
    /// The search index expressions (an empty list removes them).
    pub search_indexes: Option<Vec<String>>,
}

impl std::fmt::Debug for TokenPatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenPatch")
            .field("data", &self.data.as_ref().map(|_| "<redacted>"))
            .field("container", &self.container)
            .finish_non_exhaustive()
    }
}

/// How a patch changes metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetadataPatch {
    /// `"metadata": null`: remove every entry.
    Clear,
    /// Merge: a value sets the key, `None` removes it.
    Merge(BTreeMap<String, Option<String>>),
}

/// What applying a patch changed, for the checks that depend on it (independent flags, one
/// per field, so a set of bools is the plain shape).
#[allow(clippy::struct_excessive_bools)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Changed {
    /// `data` differs.
    pub data: bool,
    /// The own mask differs.
    pub mask: bool,
    /// The fingerprint expression differs.
    pub fingerprint_expression: bool,
    /// The container differs.
    pub container: bool,
    /// The search index expressions differ.
    pub search_indexes: bool,
}

impl Changed {
    /// Whether the change alters what the token shows of its data (mask, fingerprint
    /// expression, container, search indexes: a search for a guessed value of an index a caller
    /// chose would tell it the data piece by piece): such a change needs `token:read` resolving
    /// to `reveal`.
    pub fn touches_disclosure(self) -> bool {
        self.mask || self.fingerprint_expression || self.container || self.search_indexes
    }
}

/// RFC 7386: an object patch merges into an object (null removes a key, recursively); any
/// other patch value replaces the target.
pub fn merge_patch(target: &mut Value, patch: Value) {
    let Value::Object(changes) = patch else {
        *target = patch;
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(map) = target {
        for (k, v) in changes {
            if v.is_null() {
                map.remove(&k);
            } else {
                merge_patch(map.entry(k).or_insert(Value::Null), v);
            }
        }
    }
}

impl TokenPatch {
    /// Validates a patch of a token of `token_type` at time `now`, naming each bad field.
    /// Expressions are checked for shape and length here; whether they compile is the
    /// expression engine's call.
    pub fn parse(
        raw: RawTokenPatch,
        token_type: TokenType,
        now: OffsetDateTime,
    ) -> Result<Self, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let mut patch = Self::default();
        match raw.data {
            None => {}
            Some(Value::Null) => errors.add("data", "must not be null"),
            Some(data) => patch.data = Some(data),
        }
        patch.metadata = match raw.metadata {
            None => None,
            Some(Value::Null) => Some(MetadataPatch::Clear),
            Some(Value::Object(changes)) => {
                let mut merged = BTreeMap::new();
                for (k, v) in changes {
                    match v {
                        Value::Null => {
                            merged.insert(k, None);
                        }
                        Value::String(s) => {
                            merged.insert(k, Some(s));
                        }
                        _ => errors.add(format!("metadata.{k}"), "must be a string or null"),
                    }
                }
                Some(MetadataPatch::Merge(merged))
            }
            Some(_) => {
                errors.add("metadata", "must be an object");
                None
            }
        };
        match raw.containers {
            None => {}
            Some(Value::Array(items)) => {
                let names: Option<Vec<String>> = items
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect();
                match names {
                    Some(names) => {
                        patch.container = parse_containers(
                            Some(&names),
                            token_type.default_container(),
                            &mut errors,
                        );
                    }
                    None => errors.add("containers", "must be an array of strings"),
                }
            }
            Some(_) => errors.add("containers", "must be an array of strings"),
        }
        match raw.mask {
            None => {}
            Some(Value::Null) => patch.mask = Some(None),
            Some(mask) => {
                check_mask(&mask, &mut errors);
                patch.mask = Some(Some(mask));
            }
        }
        match raw.fingerprint_expression {
            None => {}
            Some(Value::Null) => patch.fingerprint_expression = Some(None),
            Some(Value::String(expr)) if expr.is_empty() || expr.len() > MAX_EXPRESSION_LEN => {
                errors.add("fingerprint_expression", "must be 1 to 4096 characters");
            }
            Some(Value::String(expr)) => patch.fingerprint_expression = Some(Some(expr)),
            Some(_) => errors.add("fingerprint_expression", "must be a string or null"),
        }
        match raw.expires_at {
            None => {}
            Some(Value::Null) => patch.expires_at = Some(None),
            Some(Value::String(s)) => match parse_time(&s) {
                Some(at) if at > now => patch.expires_at = Some(Some(at)),
                Some(_) => errors.add("expires_at", "must be in the future"),
                None => errors.add("expires_at", "must be an RFC 3339 date"),
            },
            Some(_) => errors.add("expires_at", "must be an RFC 3339 date or null"),
        }
        match raw.search_indexes {
            None => {}
            Some(Value::Null) => patch.search_indexes = Some(Vec::new()),
            Some(v) => patch.search_indexes = parse_search_indexes(&v, &mut errors),
        }
        if errors.is_empty() {
            Ok(patch)
        } else {
            Err(errors)
        }
    }

    /// Merges the patch into `token`: `data` per RFC 7386 then validated for the token's type,
    /// metadata merged and bounded, the rest replaced. Returns what changed.
    pub fn apply(self, token: &mut Token) -> Result<Changed, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let mut changed = Changed::default();
        if let Some(patch) = self.data {
            let mut data = token.data.clone();
            merge_patch(&mut data, patch);
            token.token_type.validate(&data, &mut errors);
            crate::token::check_data_size(&data, &mut errors);
            changed.data = data != token.data;
            token.data = data;
        }
        match self.metadata {
            None => {}
            Some(MetadataPatch::Clear) => token.metadata.clear(),
            Some(MetadataPatch::Merge(entries)) => {
                for (k, v) in entries {
                    match v {
                        Some(v) => token.metadata.insert(k, v),
                        None => token.metadata.remove(&k),
                    };
                }
                check_metadata(&token.metadata, &mut errors);
            }
        }
        if let Some(container) = self.container {
            changed.container = container != token.container;
            token.container = container;
        }
        if let Some(mask) = self.mask {
            changed.mask = mask != token.mask;
            token.mask = mask;
        }
        if let Some(expr) = self.fingerprint_expression {
            changed.fingerprint_expression = expr != token.fingerprint_expression;
            token.fingerprint_expression = expr;
        }
        if let Some(at) = self.expires_at {
            token.expires_at = at;
        }
        if let Some(indexes) = self.search_indexes {
            changed.search_indexes = indexes != token.search_indexes;
            token.search_indexes = indexes;
        }
        if errors.is_empty() {
            Ok(changed)
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use uuid::Uuid;

    fn now() -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap()
    }

    fn token(token_type: TokenType, data: Value) -> Token {
        Token {
            id: "t-1".into(),
            tenant_id: Uuid::nil(),
            token_type,
            data,
            container: Container::parse(token_type.default_container()).unwrap(),
            metadata: BTreeMap::from([("a".into(), "1".into()), ("b".into(), "2".into())]),
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
        }
    }

    fn parse(raw: Value) -> Result<TokenPatch, ValidationErrors> {
        let get = |k: &str| raw.get(k).cloned();
        TokenPatch::parse(
            RawTokenPatch {
                data: get("data"),
                metadata: get("metadata"),
                containers: get("containers"),
                mask: get("mask"),
                fingerprint_expression: get("fingerprint_expression"),
                expires_at: get("expires_at"),
                search_indexes: get("search_indexes"),
            },
            TokenType::Token,
            now(),
        )
    }

    fn fields(e: ValidationErrors) -> Vec<String> {
        e.fields().keys().cloned().collect()
    }

    #[test]
    fn data_merges_objects_per_rfc_7386() {
        let mut t = token(TokenType::Token, json!({"foo": "bar", "bar": "foo"}));
        let changed = parse(json!({"data": {"newkey": "x"}}))
            .unwrap()
            .apply(&mut t)
            .unwrap();
        assert!(changed.data);
        assert_eq!(t.data, json!({"foo": "bar", "bar": "foo", "newkey": "x"}));
        parse(json!({"data": {"bar": null, "deep": {"a": 1}}}))
            .unwrap()
            .apply(&mut t)
            .unwrap();
        assert_eq!(
            t.data,
            json!({"foo": "bar", "newkey": "x", "deep": {"a": 1}})
        );
        parse(json!({"data": {"deep": {"b": 2, "a": null}}}))
            .unwrap()
            .apply(&mut t)
            .unwrap();
        assert_eq!(t.data["deep"], json!({"b": 2}), "nested objects merge too");
    }

    #[test]
    fn non_object_data_is_replaced() {
        let mut t = token(TokenType::Token, json!({"a": 1}));
        parse(json!({"data": "plain"}))
            .unwrap()
            .apply(&mut t)
            .unwrap();
        assert_eq!(t.data, json!("plain"));
        parse(json!({"data": [1, 2]}))
            .unwrap()
            .apply(&mut t)
            .unwrap();
        assert_eq!(t.data, json!([1, 2]));
        let unchanged = parse(json!({"data": [1, 2]}))
            .unwrap()
            .apply(&mut t)
            .unwrap();
        assert!(!unchanged.data);
    }

    #[test]
    fn merged_data_is_validated_for_the_type() {
        let mut card = token(
            TokenType::Card,
            json!({"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2030}),
        );
        let ok = TokenPatch::parse(
            RawTokenPatch {
                data: Some(json!({"expiration_month": 1})),
                ..RawTokenPatch::default()
            },
            TokenType::Card,
            now(),
        )
        .unwrap();
        ok.apply(&mut card).unwrap();
        assert_eq!(card.data["number"], "4242424242424242", "other fields stay");
        let removes_required = TokenPatch::parse(
            RawTokenPatch {
                data: Some(json!({"number": null})),
                ..RawTokenPatch::default()
            },
            TokenType::Card,
            now(),
        )
        .unwrap();
        assert!(removes_required.apply(&mut card).is_err());
    }

    #[test]
    fn null_data_and_bad_fields_are_named() {
        assert_eq!(fields(parse(json!({"data": null})).unwrap_err()), ["data"]);
        let e = parse(json!({
            "metadata": {"k": 1}, "containers": "x", "mask": 5,
            "fingerprint_expression": "", "expires_at": "2000-01-01T00:00:00Z"
        }))
        .unwrap_err();
        assert_eq!(
            fields(e),
            [
                "containers",
                "expires_at",
                "fingerprint_expression",
                "mask",
                "metadata.k"
            ]
        );
        let long = "x".repeat(MAX_EXPRESSION_LEN + 1);
        assert_eq!(
            fields(parse(json!({ "fingerprint_expression": long })).unwrap_err()),
            ["fingerprint_expression"]
        );
    }

    #[test]
    fn metadata_merges_and_disclosure_changes_are_reported() {
        let mut t = token(TokenType::Token, json!("x"));
        let changed = parse(json!({
            "metadata": {"a": null, "c": "3"}, "containers": ["/other/"],
            "mask": "{{ data | last4 }}"
        }))
        .unwrap()
        .apply(&mut t)
        .unwrap();
        assert_eq!(
            t.metadata,
            BTreeMap::from([("b".into(), "2".into()), ("c".into(), "3".into())])
        );
        assert!(changed.touches_disclosure() && changed.container && changed.mask);
        let same = parse(json!({"containers": ["/other/"], "metadata": null}))
            .unwrap()
            .apply(&mut t)
            .unwrap();
        assert!(
            !same.touches_disclosure(),
            "moving to where it is changes nothing"
        );
        assert!(t.metadata.is_empty());
    }
}
