//! `POST /detokenize`: `{{ id }}` expressions replaced by the data the caller may read.

use super::{MAX_DETOKENIZE, MAX_DETOKENIZED_BYTES};
use crate::auth::Principal;
use crate::container::Container;
use crate::error::{Error, ValidationErrors};
use crate::mask::json_len;
use crate::permission::Permission;
use crate::service::Vault;
use crate::template::{collect_expressions, substitute};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

impl Vault {
    /// `POST /detokenize`: `{{ id }}` expressions replaced by the data the caller may read.
    pub async fn detokenize(&self, caller: &Principal, body: Value) -> Result<Value, Error> {
        caller.require(Permission::TokenRead)?;
        let mut ids = Vec::new();
        collect_expressions(&body, &mut ids);
        let occurrences = ids.clone();
        let unique: Vec<String> = ids
            .into_iter()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if unique.len() > MAX_DETOKENIZE {
            return Err(Error::invalid(
                "body",
                "at most 100 tokens can be detokenized in one request",
            ));
        }
        if unique.is_empty() {
            return Ok(body);
        }
        let now = self.ports.clock.now();
        let found = self
            .ports
            .tokens
            .get_many(caller.tenant_id, &unique, now)
            .await?;
        if found.len() != unique.len() {
            let have: HashSet<&str> = found.iter().map(|t| t.id.as_str()).collect();
            let mut errors = ValidationErrors::new();
            for id in unique.iter().filter(|id| !have.contains(id.as_str())) {
                errors.add("body", format!("token {id} does not exist"));
            }
            return Err(Error::Validation(errors));
        }
        // Authorize every token before decrypting any.
        let mut transforms = Vec::with_capacity(found.len());
        for stored in &found {
            let container = Container::parse(&stored.container)
                .map_err(|_| Error::internal("stored token has an invalid container"))?;
            transforms.push(caller.require_on(&container, Permission::TokenRead)?);
        }
        self.ensure_key(caller.tenant_id).await?;
        let mut values = BTreeMap::new();
        for (stored, transform) in found.into_iter().zip(transforms) {
            let token = self.decrypt_token(stored)?;
            let shown = self.show(&token, transform).ok_or(Error::Forbidden)?;
            values.insert(token.id.clone(), shown);
        }
        // Each occurrence is a copy: bound the whole answer before building it.
        let output: usize = occurrences
            .iter()
            .filter_map(|id| values.get(id))
            .map(json_len)
            .sum();
        if output > MAX_DETOKENIZED_BYTES {
            return Err(Error::invalid(
                "body",
                "the detokenized body would exceed 10 MiB",
            ));
        }
        self.record_active(caller.tenant_id, values.keys().map(String::as_str));
        Ok(substitute(body, &values))
    }
}
