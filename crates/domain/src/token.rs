//! Tokens: the token in clear, what storage keeps (ciphertext only), the bounds of ids and
//! metadata, and a patch as a client sent it. A create request is in `token_new.rs`, a patch's
//! validation in `token_patch.rs`. Token data and masks are `serde_json::Value`s: any JSON.

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
    /// Its search index expressions (docs/decisions.md §12).
    pub search_indexes: Vec<String>,
    /// The blind index terms of its search indexes and metadata (keyed hashes, never values;
    /// `search_index.rs`).
    pub search_terms: Vec<String>,
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
    /// Search index expressions.
    pub search_indexes: Vec<String>,
    /// Blind index terms (keyed hashes of the indexes' values and of the metadata).
    pub search_terms: Vec<String>,
    /// The row's version as read (0 for a new token): an update writes only over the version
    /// it read, and moves it on.
    pub version: i64,
}

/// The associated data that binds a token field's ciphertext (`data` or `mask`) to its tenant
/// and token id: a ciphertext moved to another row or field does not decrypt.
pub fn data_context(tenant_id: Uuid, id: &str, field: &str) -> Vec<u8> {
    format!("tokenvault:token:v1:{tenant_id}:{id}:{field}").into_bytes()
}

/// An RFC 3339 date in any offset, as UTC; `None` also when UTC would leave the years the
/// time crate holds (`9999-12-31T23:00:00-10:00`), which `to_offset` would panic on.
pub fn parse_time(s: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .ok()
        .and_then(|t| t.checked_to_offset(time::UtcOffset::UTC))
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

/// Whether a string is an expression rather than a literal.
pub fn is_expression(s: &str) -> bool {
    s.contains("{{") || s.contains("{%")
}

/// The stand-in `Debug` prints for a value that may hold token data.
pub(crate) fn redacted<T>(v: Option<&T>) -> Option<&'static str> {
    v.map(|_| "<redacted>")
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
    /// `search_indexes` (replaced; null removes them).
    pub search_indexes: Option<Value>,
}

impl RawTokenPatch {
    /// The patch's fields read from a JSON object (each kept as sent, absent or null; the
    /// other keys ignored).
    pub fn from_object(map: &serde_json::Map<String, Value>) -> Self {
        let get = |k: &str| map.get(k).cloned();
        Self {
            data: get("data"),
            metadata: get("metadata"),
            containers: get("containers"),
            mask: get("mask"),
            fingerprint_expression: get("fingerprint_expression"),
            expires_at: get("expires_at"),
            search_indexes: get("search_indexes"),
        }
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_time_whose_utc_leaves_the_calendar_is_none_not_a_panic() {
        assert!(super::parse_time("9999-12-31T23:00:00-10:00").is_none());
        assert!(super::parse_time("2026-11-21T12:00:00+02:00").is_some());
    }
}
