//! `PATCH /tokens/{id}`: a merge patch ([`TokenPatch`]) with the disclosure rule, applied
//! atomically per token.

use super::TokenView;
use crate::access::{TokenRef, Transform};
use crate::area_error::TokenError;
use crate::auth::Principal;
use crate::error::{Error, ValidationErrors};
use crate::permission::Permission;
use crate::ports::{RESPONSE_RENDER_STEPS, TokenWrite};
use crate::service::Tokens;
use crate::token::RawTokenPatch;
use crate::token_patch::TokenPatch;
use crate::token_type::TokenType;

/// How often a PATCH that lost a race reads the token again and reapplies itself before it
/// answers 409.
const ATTEMPTS: usize = 2;

impl Tokens {
    /// `PATCH /tokens/{id}` (merge-patch, docs/decisions.md §6). A change of `mask`,
    /// `fingerprint_expression` or `containers` needs `token:read` resolving to `reveal`: each
    /// decides what the token shows of its data, so only a caller who could already see the
    /// value may change it.
    ///
    /// Atomic per token: the row is written only over the version that was read
    /// (optimistic concurrency). A PATCH that finds another write came first reads the token
    /// again and applies itself to what is there now, every check included (a token moved
    /// meanwhile is judged in its new container, so a move is never undone); a second loss
    /// is a 409. So two PATCHes that both answer 200 both took effect.
    pub async fn update_token(
        &self,
        caller: &Principal,
        id: &str,
        patch: RawTokenPatch,
    ) -> Result<TokenView, TokenError> {
        caller.require(Permission::TokenUpdate)?;
        for _ in 0..ATTEMPTS {
            let stored = self
                .authorize_stored(caller, id, Permission::TokenUpdate)
                .await?;
            let token_type = TokenType::parse(&stored.token_type)
                .ok_or_else(|| Error::internal("stored token has an invalid type"))?;
            let now = self.clock.now();
            let patch =
                TokenPatch::parse(patch.clone(), token_type, now).map_err(Error::Validation)?;
            if let Some(view) = self.update_once(caller, stored, patch, now).await? {
                return Ok(view);
            }
        }
        // Lost every time: a 409, or the 404 of a token deleted meanwhile.
        self.authorize_stored(caller, id, Permission::TokenUpdate)
            .await?;
        Err(TokenError::Changed)
    }

    /// One read-modify-write; `None` when the row changed (or went) after it was read.
    async fn update_once(
        &self,
        caller: &Principal,
        stored: crate::token::StoredToken,
        patch: TokenPatch,
        now: time::OffsetDateTime,
    ) -> Result<Option<TokenView>, TokenError> {
        // The token's own choice, made at create, stays; without one, a token that was
        // deduplicated stays so, and the tenant's setting decides the rest.
        let dedup = stored
            .deduplicate
            .unwrap_or(caller.settings.deduplicate_tokens || stored.dedup_key.is_some());
        let mut errors = ValidationErrors::new();
        if let Some(Some(mask)) = &patch.mask {
            self.check_mask(mask, &mut errors);
        }
        if let Some(Some(expr)) = &patch.fingerprint_expression {
            self.check_expression("fingerprint_expression", expr, &mut errors);
        }
        if let Some(indexes) = &patch.search_indexes {
            self.check_search_indexes(indexes, &mut errors);
        }
        errors.into_result(())?;
        self.shared.ensure_key(caller.tenant_id).await?;
        let mut token = self.decrypt_token(stored)?;
        let source = token.container.clone();
        let had_fingerprint = token.fingerprint.is_some();
        let changed = patch.apply(&mut token).map_err(Error::Validation)?;
        if changed.touches_disclosure()
            && caller.access(
                TokenRef {
                    id: &token.id,
                    container: &source,
                },
                Permission::TokenRead,
            ) != Some(Transform::Reveal)
        {
            return Err(Error::Forbidden.into());
        }
        let transform = caller.require_on(token.reference(), Permission::TokenUpdate)?;
        let mut steps = RESPONSE_RENDER_STEPS;
        if (changed.data || changed.mask)
            && let Some(mask) = &token.mask
        {
            let mut errors = ValidationErrors::new();
            self.check_mask_cost(mask, &token.data, &mut errors, &mut steps);
            errors.into_result(())?;
        }
        // Computed again on every update: the data, the expression or the format of the hash
        // (docs/decisions.md §6) may have changed since it was stored.
        let keep = had_fingerprint && !changed.fingerprint_expression;
        token.fingerprint = if token.fingerprint_expression.is_some()
            || caller.settings.fingerprint_tokens
            || dedup
            || keep
        {
            Some(self.fingerprint_of(
                token.tenant_id,
                token.token_type,
                token.fingerprint_expression.as_deref(),
                &token.data,
                &mut steps,
            )?)
        } else {
            None
        };
        // Made again on every update: the data, the metadata or the indexes may have changed,
        // and an index's value must never outlive the value it was made from.
        token.search_terms = self.search_terms_of(&token, &mut steps)?;
        token.modified_by = Some(caller.application_id);
        token.modified_at = Some(now);
        let stored = self.encrypt_token(&token, dedup)?;
        let mut purged = false;
        loop {
            match self.store.update(&stored).await? {
                TokenWrite::Done => break,
                TokenWrite::Missing => return Ok(None),
                // An expired token still in the index: gone already, so deleted, and the
                // write tried again.
                TokenWrite::DuplicateFingerprint
                    if !purged && self.purge_expired_holders([&token], now).await? =>
                {
                    purged = true;
                }
                TokenWrite::DuplicateFingerprint | TokenWrite::DuplicateId => {
                    return Err(TokenError::IdenticalExists);
                }
            }
        }
        token.version += 1;
        self.shared
            .record_active(caller.tenant_id, [(token.id.as_str(), token.created_at)]);
        self.shared
            .audit(caller, "update", "token", [token.id.as_str()]);
        // The response shows data under the transform that decided the update access.
        Ok(Some(self.token_view(token, transform)))
    }
}
