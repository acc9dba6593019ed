//! `PATCH /tokens/{id}`: a merge patch ([`TokenPatch`]) with the disclosure rule.

use super::TokenView;
use crate::access::{TokenRef, Transform};
use crate::auth::Principal;
use crate::error::{Error, ValidationErrors};
use crate::permission::Permission;
use crate::ports::TokenWrite;
use crate::service::Vault;
use crate::token::RawTokenPatch;
use crate::token_patch::TokenPatch;
use crate::token_type::TokenType;

impl Vault {
    /// `PATCH /tokens/{id}` (merge-patch, docs/decisions.md §6). A change of `mask`,
    /// `fingerprint_expression` or `containers` needs `token:read` resolving to `reveal`: each
    /// decides what the token shows of its data, so only a caller who could already see the
    /// value may change it.
    pub async fn update_token(
        &self,
        caller: &Principal,
        id: &str,
        patch: RawTokenPatch,
    ) -> Result<TokenView, Error> {
        caller.require(Permission::TokenUpdate)?;
        let stored = self
            .authorize_stored(caller, id, Permission::TokenUpdate)
            .await?;
        // A token made with per-token deduplication keeps it across updates.
        let dedup = caller.settings.deduplicate_tokens || stored.dedup_key.is_some();
        let token_type = TokenType::parse(&stored.token_type)
            .ok_or_else(|| Error::internal("stored token has an invalid type"))?;
        let now = self.ports.clock.now();
        let patch = TokenPatch::parse(patch, token_type, now).map_err(Error::Validation)?;
        let mut errors = ValidationErrors::new();
        if let Some(Some(mask)) = &patch.mask {
            self.check_mask(mask, &mut errors);
        }
        if let Some(Some(expr)) = &patch.fingerprint_expression {
            self.check_expression("fingerprint_expression", expr, &mut errors);
        }
        errors.into_result(())?;
        self.ensure_key(caller.tenant_id).await?;
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
            return Err(Error::Forbidden);
        }
        let transform = caller.require_on(token.reference(), Permission::TokenUpdate)?;
        if (changed.data || changed.mask)
            && let Some(mask) = &token.mask
        {
            let mut errors = ValidationErrors::new();
            self.check_mask_cost(mask, &token.data, &mut errors);
            errors.into_result(())?;
        }
        let refingerprint = changed.data
            || changed.fingerprint_expression
            || (dedup && token.fingerprint.is_none());
        if refingerprint {
            let keep = had_fingerprint && !changed.fingerprint_expression;
            let expr = match (
                &token.fingerprint_expression,
                caller.settings.fingerprint_tokens || dedup || keep,
            ) {
                (Some(e), _) => Some(e.clone()),
                (None, true) => Some(token.token_type.default_fingerprint().to_string()),
                (None, false) => None,
            };
            token.fingerprint = match expr {
                Some(e) => {
                    Some(self.fingerprint_of(token.tenant_id, token.token_type, &e, &token.data)?)
                }
                None => None,
            };
        }
        token.modified_by = Some(caller.application_id);
        token.modified_at = Some(now);
        let stored = self.encrypt_token(&token, dedup)?;
        match self.ports.tokens.update(&stored).await? {
            TokenWrite::Done => {}
            TokenWrite::Missing => return Err(Error::NotFound),
            TokenWrite::DuplicateFingerprint | TokenWrite::DuplicateId => {
                return Err(Error::Conflict("an identical token exists".into()));
            }
        }
        self.record_active(caller.tenant_id, [token.id.as_str()]);
        self.audit(caller, "update", "token", [token.id.as_str()]);
        // The response shows data under the transform that decided the update access.
        let shown = self.show(&token, transform);
        Ok(TokenView { token, shown })
    }
}
