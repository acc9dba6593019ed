//! Tokens: what a client sends to create or patch one, the validated forms, and what storage
//! keeps (ciphertext only). Token data and masks are `serde_json::Value`s: any JSON.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::container::Container;
use crate::error::ValidationErrors;
use crate::token_type::TokenType;

/// Longest literal token id.
pub const MAX_ID_LEN: usize = 400;
/// Shortest literal token id.
pub const MIN_ID_LEN: usize = 3;
/// Characters a literal id may not contain (docs/decisions.md §6).
pub const FORBIDDEN_ID_CHARS: &str = "#/\\+?[]|&=%<>{}^";
/// Most metadata entries on one token.
pub const MAX_METADATA_ENTRIES: usize = 50;
/// Longest metadata key.
pub const MAX_METADATA_KEY_LEN: usize = 128;
/// Longest metadata value.
pub const MAX_METADATA_VALUE_LEN: usize = 1024;
/// Longest expression (mask leaf, fingerprint, alias).
pub const MAX_EXPRESSION_LEN: usize = 4096;

/// A token in clear, as the use cases handle it. `Debug` never prints `data` or `mask`.
#[derive(Clone, PartialEq)]
pub struct Token {
    /// Identifier (unique within the tenant).
    pub id: String,
    /// Owning tenant.
    pub tenant_id: Uuid,
    /// Type.
    pub token_type: TokenType,
    /// The sensitive value.
    pub data: Value,
    /// Its container.
    pub container: Container,
    /// Non-sensitive key/values.
    pub metadata: BTreeMap<String, String>,
    /// Its own mask (the type's default applies when `None`).
    pub mask: Option<Value>,
    /// Keyed hash of the fingerprint expression's output.
    pub fingerprint: Option<String>,
    /// Its own fingerprint expression.
    pub fingerprint_expression: Option<String>,
    /// Creating application.
    pub created_by: Option<Uuid>,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last modifying application.
    pub modified_by: Option<Uuid>,
    /// Last change.
    pub modified_at: Option<OffsetDateTime>,
    /// When it stops existing.
    pub expires_at: Option<OffsetDateTime>,
    /// Its own `deduplicate_token` choice (`None`: the create made none).
    pub deduplicate: Option<bool>,
    /// The stored row's version as read (0 for a new token).
    pub version: i64,
}

impl Token {
    /// The token as access rules see it: its id and container.
    pub fn reference(&self) -> crate::access::TokenRef<'_> {
        crate::access::TokenRef {
            id: &self.id,
            container: &self.container,
        }
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("id", &self.id)
            .field("tenant_id", &self.tenant_id)
            .field("type", &self.token_type)
            .field("container", &self.container)
            .field("data", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// A token as storage keeps it: `data` and `mask` are ciphertext bound to tenant and id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredToken {
    /// Identifier.
    pub id: String,
    /// Owning tenant.
    pub tenant_id: Uuid,
    /// Type name.
    pub token_type: String,
    /// Container path.
    pub container: String,
    /// Metadata.
    pub metadata: BTreeMap<String, String>,
    /// Encrypted JSON of the data.
    pub data: Vec<u8>,
    /// Encrypted JSON of the mask.
    pub mask: Option<Vec<u8>>,
    /// Fingerprint.
    pub fingerprint: Option<String>,
    /// Fingerprint when created with deduplication on (unique per tenant).
    pub dedup_key: Option<String>,
    /// Fingerprint expression.
    pub fingerprint_expression: Option<String>,
    /// Creating application.
    pub created_by: Option<Uuid>,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last modifying application.
    pub modified_by: Option<Uuid>,
    /// Last change.
    pub modified_at: Option<OffsetDateTime>,
    /// Expiry.
    pub expires_at: Option<OffsetDateTime>,
    /// The token's own `deduplicate_token` choice (`None`: the create made none).
    pub deduplicate: Option<bool>,
    /// The row's version as read (0 for a new token): an update writes only over the version
    /// it read, and moves it on.
    pub version: i64,
}

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
        };
        errors.into_result(raw).map_err(|e| match e {
            crate::Error::Validation(v) => v,
            _ => ValidationErrors::new(),
        })
    }
}

/// The associated data that binds a token field's ciphertext (`data` or `mask`) to its tenant
/// and token id: a ciphertext moved to another row or field does not decrypt.
pub fn data_context(tenant_id: Uuid, id: &str, field: &str) -> Vec<u8> {
    format!("tokenvault:token:v1:{tenant_id}:{id}:{field}").into_bytes()
}

/// An RFC 3339 date in any offset, as UTC.
pub fn parse_time(s: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(|t| t.to_offset(time::UtcOffset::UTC))
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
}

/// Validates one container list (at most one item) into the container, defaulting to `default`.
pub fn parse_containers(
    raw: Option<&[String]>,
    default: &str,
    errors: &mut ValidationErrors,
) -> Option<Container> {
    match raw {
        None | Some([]) => Container::parse(default).ok(),
        Some([one]) => match Container::parse(one) {
            Ok(c) => Some(c),
            Err(m) => {
                errors.add("containers.0", m);
                None
            }
        },
        Some(_) => {
            errors.add("containers", "at most one container is allowed");
            None
        }
    }
}

/// The largest token data, as JSON (1 MiB): the HTTP body limit bounds it there, and this
/// bounds it everywhere else (tokens made by code through `svc`, merge patches).
pub const MAX_DATA_BYTES: usize = 1 << 20;

/// Refuses data larger than [`MAX_DATA_BYTES`].
pub fn check_data_size(data: &Value, errors: &mut ValidationErrors) {
    if crate::json_size::json_len(data) > MAX_DATA_BYTES {
        errors.add("data", "must be at most 1 MiB as JSON");
    }
}

/// Validates metadata bounds.
pub fn check_metadata(metadata: &BTreeMap<String, String>, errors: &mut ValidationErrors) {
    if metadata.len() > MAX_METADATA_ENTRIES {
        errors.add("metadata", "at most 50 entries");
    }
    for (k, v) in metadata {
        if k.is_empty() || k.chars().count() > MAX_METADATA_KEY_LEN {
            errors.add(format!("metadata.{k}"), "keys must be 1 to 128 characters");
        } else if v.chars().count() > MAX_METADATA_VALUE_LEN {
            errors.add(
                format!("metadata.{k}"),
                "values must be at most 1024 characters",
            );
        }
    }
}

/// Validates a literal id.
pub fn check_literal_id(id: &str) -> Result<(), &'static str> {
    let n = id.chars().count();
    if !(MIN_ID_LEN..=MAX_ID_LEN).contains(&n) {
        return Err("must be 3 to 400 characters");
    }
    if id
        .chars()
        .any(|c| FORBIDDEN_ID_CHARS.contains(c) || c.is_control() || c.is_whitespace())
    {
        return Err("must not contain whitespace or any of # / \\ + ? [ ] | & = % < > { } ^");
    }
    Ok(())
}

/// The stand-in `Debug` prints for a value that may hold token data.
fn redacted<T>(v: Option<&T>) -> Option<&'static str> {
    v.map(|_| "<redacted>")
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

impl fmt::Debug for RawTokenPatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawTokenPatch")
            .field("data", &redacted(self.data.as_ref()))
            .field("containers", &self.containers)
            .field("mask", &redacted(self.mask.as_ref()))
            .finish_non_exhaustive()
    }
}

/// Whether a string is an expression rather than a literal.
pub fn is_expression(s: &str) -> bool {
    s.contains("{{") || s.contains("{%")
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
            }),
            _ => Err(errors),
        }
    }
}

/// The most expressions one mask may hold (each is rendered on every read).
pub const MAX_MASK_FIELDS: usize = 32;

/// Validates a mask: its shape ([`check_mask_shape`]) and at most [`MAX_MASK_FIELDS`]
/// expressions in all.
pub fn check_mask(mask: &Value, errors: &mut ValidationErrors) {
    check_mask_shape(mask, "mask", errors);
    let mut leaves = Vec::new();
    mask_expressions(mask, "mask", &mut leaves);
    if leaves.len() > MAX_MASK_FIELDS {
        errors.add("mask", "at most 32 expressions");
    }
}

/// A mask is an expression string or an object (nested) whose leaves are expression strings.
pub fn check_mask_shape(mask: &Value, field: &str, errors: &mut ValidationErrors) {
    match mask {
        Value::String(s) if s.len() <= MAX_EXPRESSION_LEN => {}
        Value::String(_) => errors.add(field, "expression is too long"),
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                check_mask_shape(v, &format!("{field}.{k}"), errors);
            }
        }
        _ => errors.add(field, "must be an expression string or an object of them"),
    }
}

/// Every expression string in a mask, with its field path.
pub fn mask_expressions<'a>(mask: &'a Value, field: &str, out: &mut Vec<(String, &'a str)>) {
    match mask {
        Value::String(s) => out.push((field.to_string(), s)),
        Value::Object(map) => {
            for (k, v) in map {
                mask_expressions(v, &format!("{field}.{k}"), out);
            }
        }
        _ => {}
    }
}

/// `PATCH /tokens/{id}` (merge-patch) as a client sent it. Each field is `None` when absent,
/// `Some(Value::Null)` when explicitly null.
#[derive(Clone, Default)]
pub struct RawTokenPatch {
    /// `data` (replaced).
    pub data: Option<Value>,
    /// `metadata` (merged per RFC 7386).
    pub metadata: Option<Value>,
    /// `containers` (replaced).
    pub containers: Option<Value>,
    /// `mask` (replaced; null removes the own mask).
    pub mask: Option<Value>,
    /// `fingerprint_expression` (replaced; null removes it).
    pub fingerprint_expression: Option<Value>,
    /// `expires_at` (replaced; null removes it), as given.
    pub expires_at: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
