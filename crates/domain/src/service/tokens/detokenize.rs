//! Detokenization: `{{ id }}` expressions replaced by the data the caller may see. One code path
//! for `POST /detokenize` (`token:read`), reactor arguments and proxy bodies (`token:use`; proxies
//! also accept `{{ id | json: '$.path' }}` and other filters).

use super::{MAX_DETOKENIZE, MAX_DETOKENIZED_BYTES};
use crate::access::TokenRef;
use crate::auth::Principal;
use crate::container::Container;
use crate::error::{Error, ValidationErrors};
use crate::mask::json_len;
use crate::permission::Permission;
use crate::ports::{RENDER_STEPS, RESPONSE_RENDER_STEPS};
use crate::service::Tokens;
use crate::template::{collect_all, substitute_all};
use crate::token::StoredToken;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use time::OffsetDateTime;
use uuid::Uuid;

/// Tokens read beside another read (a proxy reads them beside its application, each read being
/// a round trip on PostgreSQL). Nothing is looked at until [`Tokens::detokenize_value`] has the
/// acting principal: they stand only for the tenant and the ids they were read for, and every
/// one is then authorized as any read is.
#[derive(Debug)]
pub(crate) struct ReadAhead {
    tenant_id: Uuid,
    wanted: Vec<String>,
    found: Vec<StoredToken>,
}

impl ReadAhead {
    /// `found`: the live tokens among `wanted` (distinct, in order, as [`wanted_ids`] gives
    /// them) of `tenant_id`.
    pub(crate) fn new(tenant_id: Uuid, wanted: Vec<String>, found: Vec<StoredToken>) -> Self {
        Self {
            tenant_id,
            wanted,
            found,
        }
    }
}

/// The distinct token ids of `body`'s expressions, in order.
pub(crate) fn wanted_ids(body: &Value, with_filters: bool) -> Vec<String> {
    let mut expressions = Vec::new();
    collect_all(body, with_filters, &mut expressions);
    let unique: BTreeSet<String> = expressions.into_iter().map(|e| e.id).collect();
    unique.into_iter().collect()
}

/// How one detokenization is done.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DetokenizeAs<'a> {
    /// The permission needed on each token's container.
    pub permission: Permission,
    /// The field errors name (`body`, `args`).
    pub field: &'a str,
    /// Whether `{{ id | filters }}` is an expression (rendered over the token's shown data).
    pub with_filters: bool,
}

/// The most token data (ciphertext bytes, a bound of the plaintext) one request may have
/// decrypted: checked before any is, so a request naming 100 large tokens costs nothing.
const MAX_DECRYPTED_BYTES: usize = MAX_DETOKENIZED_BYTES;
/// The most token data the filters of one request may read together: every distinct filtered
/// expression reads its token's whole data, so 1,000 filters over a 1 MiB token would read a
/// gigabyte.
const MAX_FILTER_INPUT: usize = 32 << 20;
/// What encryption adds to a token's data (nonce and tag), at most.
const CIPHER_OVERHEAD: usize = 64;

/// The most distinct filtered expressions (`{{ id | … }}`) in one request.
const MAX_EXPRESSIONS: usize = 1000;

/// The JSONPath of a filter that is exactly `json: '<path>'` (or with double quotes).
fn lone_json_path(filter: &str) -> Option<&str> {
    let rest = filter
        .strip_prefix("json")?
        .trim_start()
        .strip_prefix(':')?
        .trim();
    let quote = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = rest.strip_prefix(quote)?.strip_suffix(quote)?;
    (!inner.contains(quote)).then_some(inner)
}

/// The tokens a detokenization used: id → creation time.
pub(crate) type Used = BTreeMap<String, OffsetDateTime>;

/// `used` as the monthly activity takes it.
pub(crate) fn active(used: &Used) -> impl Iterator<Item = (&str, OffsetDateTime)> {
    used.iter().map(|(id, created)| (id.as_str(), *created))
}

impl Tokens {
    /// A filtered expression's value: a lone `json: '$.path'` keeps the selected JSON (a
    /// number stays a number); any other filter chain renders to text.
    /// The rendered expressions of one request share `steps` (docs/decisions.md §6).
    fn filtered(&self, filter: &str, data: &Value, steps: &mut u64) -> Result<Value, String> {
        match lone_json_path(filter) {
            Some(path) => self.expressions.select(path, data),
            None => self
                .expressions
                .render_metered(&format!("{{{{ data | {filter} }}}}"), data, steps)
                .map(Value::String)
                .map_err(|e| e.to_string()),
        }
    }

    /// `POST /detokenize`: `{{ id }}` expressions replaced by the data the caller may read.
    pub async fn detokenize(&self, caller: &Principal, body: Value) -> Result<Value, Error> {
        caller.require(Permission::TokenRead)?;
        let how = DetokenizeAs {
            permission: Permission::TokenRead,
            field: "body",
            with_filters: false,
        };
        let (body, used) = self.detokenize_value(caller, body, how, None).await?;
        self.shared.record_active(caller.tenant_id, active(&used));
        self.shared
            .audit(caller, "use", "token", used.keys().map(String::as_str));
        Ok(body)
    }

    /// Reads `tenant_id`'s tokens that `body`'s expressions name, for a detokenization whose
    /// caller's rights are not looked at yet; `None` when there are none, too many, or the read
    /// failed (the detokenization then reads, and answers, as usual).
    pub(crate) async fn read_ahead(
        &self,
        tenant_id: Uuid,
        body: &Value,
        with_filters: bool,
    ) -> Option<ReadAhead> {
        let wanted = wanted_ids(body, with_filters);
        if wanted.is_empty() || wanted.len() > MAX_DETOKENIZE {
            return None;
        }
        let now = self.clock.now();
        let found = self.store.get_many(tenant_id, &wanted, now).await.ok()?;
        Some(ReadAhead {
            tenant_id,
            wanted,
            found,
        })
    }

    /// Replaces the expressions in `body`: at most [`MAX_DETOKENIZE`] distinct tokens, every one
    /// authorized for `how.permission` before any is decrypted, the answer bounded by
    /// [`MAX_DETOKENIZED_BYTES`]. Returns the body and the tokens used (id → creation time, for
    /// the monthly activity). `ahead` is
    /// used only when it was read for the caller's tenant and these very ids.
    pub(crate) async fn detokenize_value(
        &self,
        caller: &Principal,
        body: Value,
        how: DetokenizeAs<'_>,
        ahead: Option<ReadAhead>,
    ) -> Result<(Value, Used), Error> {
        let mut expressions = Vec::new();
        collect_all(&body, how.with_filters, &mut expressions);
        let unique: BTreeSet<String> = expressions.iter().map(|e| e.id.clone()).collect();
        if unique.len() > MAX_DETOKENIZE {
            return Err(Error::invalid(
                how.field,
                "at most 100 tokens can be detokenized in one request",
            ));
        }
        if unique.is_empty() {
            return Ok((body, Used::new()));
        }
        let wanted: Vec<String> = unique.iter().cloned().collect();
        let found = match ahead {
            Some(ahead) if ahead.tenant_id == caller.tenant_id && ahead.wanted == wanted => {
                // Read by another statement: each row is held to what the read stood for
                // again (the caller's tenant, an id asked for, live now).
                let now = self.clock.now();
                let mut found = ahead.found;
                found.retain(|t| {
                    t.tenant_id == caller.tenant_id
                        && wanted.contains(&t.id)
                        && t.expires_at.is_none_or(|at| at > now)
                });
                found
            }
            _ => {
                self.store
                    .get_many(caller.tenant_id, &wanted, self.clock.now())
                    .await?
            }
        };
        if found.len() != wanted.len() {
            let have: HashSet<&str> = found.iter().map(|t| t.id.as_str()).collect();
            let mut errors = ValidationErrors::new();
            for id in wanted.iter().filter(|id| !have.contains(id.as_str())) {
                errors.add(how.field, format!("token {id} does not exist"));
            }
            return Err(Error::Validation(errors));
        }
        // Authorize every token before decrypting any.
        let mut transforms = Vec::with_capacity(found.len());
        for stored in &found {
            let container = Container::parse(&stored.container)
                .map_err(|_| Error::internal("stored token has an invalid container"))?;
            transforms.push(caller.require_on(
                TokenRef {
                    id: &stored.id,
                    container: &container,
                },
                how.permission,
            )?);
        }
        let stored_bytes: usize = found.iter().map(|t| t.data.len()).sum();
        if stored_bytes > MAX_DECRYPTED_BYTES + found.len() * CIPHER_OVERHEAD {
            return Err(Error::invalid(
                how.field,
                "the tokens of one request may hold at most 10 MiB of data together",
            ));
        }
        self.shared.ensure_key(caller.tenant_id).await?;
        let used: Used = found.iter().map(|t| (t.id.clone(), t.created_at)).collect();
        let mut shown = BTreeMap::new();
        let mut masks = RESPONSE_RENDER_STEPS;
        for (stored, transform) in found.into_iter().zip(transforms) {
            let token = self.decrypt_token(stored)?;
            let value = self
                .show_sharing(&token, transform, &mut masks)
                .ok_or(Error::Forbidden)?;
            shown.insert(token.id.clone(), value);
        }
        let mut values = BTreeMap::new();
        let mut rendered = 0_usize;
        let mut read_by_filters = 0_usize;
        let mut sizes: BTreeMap<&str, usize> = BTreeMap::new();
        let mut steps = RENDER_STEPS;
        for e in &expressions {
            let key = e.key();
            if values.contains_key(&key) {
                continue;
            }
            let Some(data) = shown.get(&e.id) else {
                continue;
            };
            let value = match &e.filter {
                None => data.clone(),
                Some(filter) => {
                    // Each distinct filtered expression is work and memory of its own: bounded
                    // in number and in what they produce together, as they are made.
                    if values.len() >= MAX_EXPRESSIONS {
                        return Err(Error::invalid(
                            how.field,
                            "at most 1,000 distinct expressions in one request",
                        ));
                    }
                    let size = *sizes.entry(e.id.as_str()).or_insert_with(|| json_len(data));
                    read_by_filters += size;
                    if read_by_filters > MAX_FILTER_INPUT {
                        return Err(Error::invalid(
                            how.field,
                            "the expressions of one request may read at most 32 MiB of token \
                             data together",
                        ));
                    }
                    let value = self.filtered(filter, data, &mut steps).map_err(|why| {
                        Error::invalid(
                            how.field,
                            format!("the expression on token {} failed: {why}", e.id),
                        )
                    })?;
                    rendered += json_len(&value);
                    if rendered > MAX_DETOKENIZED_BYTES {
                        return Err(Error::invalid(
                            how.field,
                            format!("the detokenized {} would exceed 10 MiB", how.field),
                        ));
                    }
                    value
                }
            };
            values.insert(key, value);
        }
        // Each occurrence is a copy: bound the whole answer before building it.
        let size: usize = expressions
            .iter()
            .filter_map(|e| values.get(&e.key()))
            .map(json_len)
            .sum();
        if size > MAX_DETOKENIZED_BYTES {
            return Err(Error::invalid(
                how.field,
                format!("the detokenized {} would exceed 10 MiB", how.field),
            ));
        }
        Ok((substitute_all(body, how.with_filters, &values), used))
    }
}

#[cfg(test)]
mod tests {
    use super::lone_json_path;

    #[test]
    fn only_a_lone_json_filter_selects() {
        assert_eq!(lone_json_path("json: '$.number'"), Some("$.number"));
        assert_eq!(lone_json_path("json:\"$.a\""), Some("$.a"));
        assert_eq!(lone_json_path("json: '$.a' | upcase"), None);
        assert_eq!(lone_json_path("upcase"), None);
        assert_eq!(lone_json_path("json: $.a"), None);
    }
}
