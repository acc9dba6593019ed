//! Sealing: the tenant key, encryption of `data` and `mask` (AES-GCM bound to tenant, id and
//! field), the caller's transform, expression checks and fingerprints.

use super::TokenView;
use crate::access::Transform;
use crate::container::Container;
use crate::error::{Error, ValidationErrors};
use crate::mask::mask_expressions;
use crate::mask::{render_mask_sharing, try_render_mask_within};
use crate::ports::{MASK_STEPS, RENDER_STEPS, RenderError};
use crate::service::Tokens;
use crate::token::{StoredToken, Token, data_context};
use crate::token_type::TokenType;
use serde_json::Value;
use uuid::Uuid;

/// What a fingerprint hashes: the type, the expression's text and its output, each
/// length-prefixed, so that no choice of expression or data yields another token's input (no
/// planted duplicates). A token's own expression (`Some`) is hashed in a domain of its own, so
/// it never matches the type's default (`None`), however it is spelled: one who spells the
/// default by hand learns nothing from comparing fingerprints. The default keeps the format
/// fingerprints were stored in before, so stored ones still deduplicate.
fn fingerprint_input(token_type: TokenType, own: Option<&str>, rendered: &str) -> Vec<u8> {
    let (mut input, expr) = match own {
        None => (
            b"tokenvault:fingerprint:v2".to_vec(),
            token_type.default_fingerprint(),
        ),
        Some(expr) => (b"tokenvault:fingerprint:v3:own-expression".to_vec(), expr),
    };
    for part in [token_type.as_str(), expr, rendered] {
        input.extend_from_slice(&(part.len() as u64).to_be_bytes());
        input.extend_from_slice(part.as_bytes());
    }
    input
}

/// What a 400 says of an expression that needs more work or output than its budget.
pub(super) const TOO_COSTLY: &str =
    "needs more work than an expression may do on this data (its step budget or 1 MiB of output)";

/// The 400 of an expression that cannot be rendered on the token's data, naming `field`.
pub(super) fn render_error(field: &str, e: &RenderError) -> Error {
    match e {
        RenderError::TooCostly(_) => Error::invalid(field, TOO_COSTLY),
        RenderError::Failed(_) => Error::invalid(field, "cannot be evaluated on this data"),
    }
}

fn to_json_bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
}

impl Tokens {
    pub(super) fn check_expression(&self, field: &str, expr: &str, errors: &mut ValidationErrors) {
        if let Err(why) = self.expressions.check(expr) {
            tracing::debug!(field, reason = %why, "expression refused");
            errors.add(field, "is not a valid expression");
        }
    }

    pub(super) fn check_mask(&self, mask: &Value, errors: &mut ValidationErrors) {
        let mut exprs = Vec::new();
        mask_expressions(mask, "mask", &mut exprs);
        for (field, expr) in exprs {
            self.check_expression(&field, expr, errors);
        }
    }

    /// Refuses (400 naming `mask`) a mask that is too costly to render on `data`: more work
    /// than its step budget or more than 1 MiB. Checked where the mask or the data changes, so
    /// that reads never meet one (a read that does shows no data).
    /// The mask may cost at most [`MASK_STEPS`], and what it costs comes out of the request's
    /// `steps` (a batch shares them).
    pub(super) fn check_mask_cost(
        &self,
        mask: &Value,
        data: &Value,
        errors: &mut ValidationErrors,
        steps: &mut u64,
    ) {
        let mut allowed = (*steps).min(MASK_STEPS);
        let before = allowed;
        let outcome = try_render_mask_within(self.expressions.as_ref(), mask, data, &mut allowed);
        *steps = steps.saturating_sub(before - allowed);
        if let Err(RenderError::TooCostly(why)) = outcome {
            tracing::debug!(reason = %why, "mask refused");
            errors.add("mask", TOO_COSTLY);
        }
    }

    pub(super) fn encrypt_token(&self, token: &Token, dedup: bool) -> Result<StoredToken, Error> {
        let cipher = &self.cipher;
        let seal = |field: &str, v: &Value| {
            cipher
                .encrypt(
                    token.tenant_id,
                    &data_context(token.tenant_id, &token.id, field),
                    &to_json_bytes(v),
                )
                .map_err(|e| Error::internal_from("encryption failed", e))
        };
        Ok(StoredToken {
            id: token.id.clone(),
            tenant_id: token.tenant_id,
            token_type: token.token_type.as_str().to_string(),
            container: token.container.as_str().to_string(),
            metadata: token.metadata.clone(),
            data: seal("data", &token.data)?,
            mask: token.mask.as_ref().map(|m| seal("mask", m)).transpose()?,
            fingerprint: token.fingerprint.clone(),
            dedup_key: if dedup {
                token.fingerprint.clone()
            } else {
                None
            },
            fingerprint_expression: token.fingerprint_expression.clone(),
            created_by: token.created_by,
            created_at: token.created_at,
            modified_by: token.modified_by,
            modified_at: token.modified_at,
            expires_at: token.expires_at,
            deduplicate: token.deduplicate,
            search_indexes: token.search_indexes.clone(),
            search_terms: token.search_terms.clone(),
            version: token.version,
        })
    }

    pub(in crate::service) fn decrypt_token(&self, stored: StoredToken) -> Result<Token, Error> {
        let cipher = &self.cipher;
        let open = |field: &str, ct: &[u8]| -> Result<Value, Error> {
            let bytes = cipher
                .decrypt(
                    stored.tenant_id,
                    &data_context(stored.tenant_id, &stored.id, field),
                    ct,
                )
                .map_err(|e| {
                    Error::internal_from(format!("token {field} cannot be decrypted"), e)
                })?;
            serde_json::from_slice(&bytes)
                .map_err(|e| Error::internal_from("stored token is not JSON", e))
        };
        let corrupt = |what: &str| Error::internal(format!("stored token has an invalid {what}"));
        Ok(Token {
            data: open("data", &stored.data)?,
            mask: stored
                .mask
                .as_deref()
                .map(|m| open("mask", m))
                .transpose()?,
            token_type: TokenType::parse(&stored.token_type).ok_or_else(|| corrupt("type"))?,
            container: Container::parse(&stored.container).map_err(|_| corrupt("container"))?,
            id: stored.id,
            tenant_id: stored.tenant_id,
            metadata: stored.metadata,
            fingerprint: stored.fingerprint,
            fingerprint_expression: stored.fingerprint_expression,
            created_by: stored.created_by,
            created_at: stored.created_at,
            modified_by: stored.modified_by,
            modified_at: stored.modified_at,
            expires_at: stored.expires_at,
            deduplicate: stored.deduplicate,
            search_indexes: stored.search_indexes,
            search_terms: stored.search_terms,
            version: stored.version,
        })
    }

    /// What the caller sees of `token.data` under `transform`; the masks of one response share
    /// `steps`.
    pub(in crate::service) fn show_sharing(
        &self,
        token: &Token,
        transform: Transform,
        steps: &mut u64,
    ) -> Option<Value> {
        match transform {
            Transform::Reveal => Some(token.data.clone()),
            Transform::Redact => None,
            Transform::Mask => {
                let mask = token
                    .mask
                    .clone()
                    .or_else(|| token.token_type.default_mask())?;
                render_mask_sharing(self.expressions.as_ref(), &mask, &token.data, steps)
            }
        }
    }

    /// The fingerprint of `data` under the token's own expression (`Some`) or the type's
    /// default (`None`).
    pub(super) fn fingerprint_of(
        &self,
        tenant_id: Uuid,
        token_type: TokenType,
        own: Option<&str>,
        data: &Value,
        steps: &mut u64,
    ) -> Result<String, Error> {
        let expr = own.unwrap_or_else(|| token_type.default_fingerprint());
        let rendered = render_sharing(self.expressions.as_ref(), expr, data, steps)
            .map_err(|e| render_error("fingerprint_expression", &e))?;
        let input = fingerprint_input(token_type, own, &rendered);
        self.cipher
            .fingerprint(tenant_id, &input)
            .map_err(|e| Error::internal_from("fingerprint failed", e))
    }

    /// A token as a read shows it to a caller whose transform is `transform`: `data` as the
    /// transform shows it, and the fingerprint only under `reveal` (a fingerprint compared with
    /// those of one's own tokens would confirm a guessed value; docs/decisions.md §6).
    pub(in crate::service) fn token_view(&self, token: Token, transform: Transform) -> TokenView {
        let mut steps = RENDER_STEPS;
        self.token_view_sharing(token, transform, &mut steps)
    }

    /// [`Self::token_view`] for one of several tokens of a response, whose masks share `steps`.
    pub(in crate::service) fn token_view_sharing(
        &self,
        mut token: Token,
        transform: Transform,
        steps: &mut u64,
    ) -> TokenView {
        let shown = self.show_sharing(&token, transform, steps);
        if transform != Transform::Reveal {
            token.fingerprint = None;
        }
        TokenView { token, shown }
    }
}

/// Renders `expr` within `*steps` (at most [`RENDER_STEPS`]), taking what it used from them: the
/// expressions of one write share its budget.
pub(super) fn render_sharing(
    engine: &dyn crate::ports::Expressions,
    expr: &str,
    data: &Value,
    steps: &mut u64,
) -> Result<String, RenderError> {
    let mut allowed = (*steps).min(RENDER_STEPS);
    let before = allowed;
    let out = engine.render_metered(expr, data, &mut allowed);
    *steps = steps.saturating_sub(before - allowed);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_own_expression_never_hashes_like_the_default() {
        for t in [
            TokenType::SocialSecurityNumber,
            TokenType::Card,
            TokenType::Token,
        ] {
            let default = fingerprint_input(t, None, "123456789");
            let by_hand = fingerprint_input(t, Some(t.default_fingerprint()), "123456789");
            assert_ne!(default, by_hand);
            assert_eq!(
                default,
                fingerprint_input(t, None, "123456789"),
                "stable: stored fingerprints keep matching"
            );
        }
    }
}
