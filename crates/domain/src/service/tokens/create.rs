//! `POST /tokens`: validation, alias ids, fingerprints and deduplication (within one
//! container).

use super::{ALIAS_ATTEMPTS, TokenView};
use crate::area_error::TokenError;
use crate::auth::Principal;
use crate::error::{Error, ValidationErrors};
use crate::permission::Permission;
use crate::ports::{RESPONSE_RENDER_STEPS, TokenWrite};
use crate::service::Tokens;
use crate::token::{Token, check_literal_id};
use crate::token_new::{IdSpec, NewToken, RawNewToken};
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

/// The id of a token created without one: a UUIDv7 of `at`'s millisecond and 74 random bits
/// (no counter, so an id tells nothing of the ids made beside it). Ids in creation order put
/// each new entry of the token key and the audit entity index beside the last one: a group
/// commit writes one index page per index instead of one per token (SQLite's tokenize rate
/// 1.7 times, docs/performance-journal.md). The millisecond is the token's `created_at`, which every
/// reader of the token sees already; a caller that wants ids without it passes its own `id`.
pub(crate) fn generated_id(at: OffsetDateTime) -> String {
    let secs = u64::try_from(at.unix_timestamp()).unwrap_or(0);
    let ts = uuid::Timestamp::from_unix(uuid::NoContext, secs, at.nanosecond());
    Uuid::new_v7(ts).to_string()
}

impl Tokens {
    /// Turns a validated request into a token (id chosen, expressions checked, fingerprint).
    /// The expressions it renders (mask check, fingerprint, id) take their work from `steps`,
    /// which the tokens of one request share.
    pub(super) fn prepare(
        &self,
        caller: &Principal,
        new: NewToken,
        now: OffsetDateTime,
        steps: &mut u64,
    ) -> Result<(Token, bool), Error> {
        let mut errors = ValidationErrors::new();
        if let Some(mask) = &new.mask {
            self.check_mask(mask, &mut errors);
            if errors.is_empty() {
                self.check_mask_cost(mask, &new.data, &mut errors, steps);
            }
        }
        if let Some(expr) = &new.fingerprint_expression {
            self.check_expression("fingerprint_expression", expr, &mut errors);
        }
        if let IdSpec::Expression(expr) = &new.id {
            self.check_expression("id", expr, &mut errors);
        }
        self.check_search_indexes(&new.search_indexes, &mut errors);
        errors.into_result(())?;
        let dedup = new
            .deduplicate
            .unwrap_or(caller.settings.deduplicate_tokens);
        let fingerprint = if new.fingerprint_expression.is_some()
            || caller.settings.fingerprint_tokens
            || dedup
        {
            Some(self.fingerprint_of(
                caller.tenant_id,
                new.token_type,
                new.fingerprint_expression.as_deref(),
                &new.data,
                steps,
            )?)
        } else {
            None
        };
        let id = self.render_id(&new.id, &new.data, now, steps)?;
        let mut token = Token {
            id,
            tenant_id: caller.tenant_id,
            token_type: new.token_type,
            data: new.data,
            container: new.container,
            metadata: new.metadata,
            mask: new.mask,
            fingerprint,
            fingerprint_expression: new.fingerprint_expression,
            created_by: Some(caller.application_id),
            created_at: now,
            modified_by: None,
            modified_at: None,
            expires_at: new.expires_at,
            deduplicate: new.deduplicate,
            search_indexes: new.search_indexes,
            search_terms: Vec::new(),
            version: 0,
        };
        token.search_terms = self.search_terms_of(&token, steps)?;
        Ok((token, dedup))
    }

    pub(super) fn render_id(
        &self,
        spec: &IdSpec,
        data: &Value,
        now: OffsetDateTime,
        steps: &mut u64,
    ) -> Result<String, Error> {
        match spec {
            IdSpec::Generated => Ok(generated_id(now)),
            IdSpec::Literal(id) => Ok(id.clone()),
            IdSpec::Expression(expr) => {
                let id =
                    super::sealing::render_sharing(self.expressions.as_ref(), expr, data, steps)
                        .map_err(|e| super::sealing::render_error("id", &e))?;
                check_literal_id(&id).map_err(|m| {
                    Error::invalid(
                        "id",
                        format!("evaluates to an id that {}", m.trim_start_matches("must ")),
                    )
                })?;
                Ok(id)
            }
        }
    }

    // ---- create ---------------------------------------------------------------------------

    /// `POST /tokens`. Returns the token (without data) and whether it was created (`false`: an
    /// existing token was returned by deduplication).
    pub async fn create_token(
        &self,
        caller: &Principal,
        raw: RawNewToken,
    ) -> Result<(TokenView, bool), TokenError> {
        caller.require(Permission::TokenCreate)?;
        let now = self.clock.now();
        let new = NewToken::parse(raw, now).map_err(Error::Validation)?;
        self.shared.ensure_key(caller.tenant_id).await?;
        let alias = matches!(new.id, IdSpec::Expression(_));
        let spec = new.id.clone();
        let mut steps = RESPONSE_RENDER_STEPS;
        let (mut token, dedup) = self.prepare(caller, new, now, &mut steps)?;
        // Decided on the token as it will be stored: a session's rules may select by id, which
        // exists only now (and again for each alias retried below).
        caller.require_on(token.reference(), Permission::TokenCreate)?;
        if dedup && let Some(existing) = self.existing_duplicate(&token, now).await? {
            caller.require_on(existing.token.reference(), Permission::TokenCreate)?;
            // The answer tells that this value is stored: a read of that token.
            self.shared
                .audit(caller, "read", "token", [existing.token.id.as_str()]);
            return Ok((existing, false));
        }
        let mut attempts = 0;
        let mut purged = false;
        loop {
            let stored = self.encrypt_token(&token, dedup)?;
            match self.store.insert(&stored).await? {
                TokenWrite::Done => break,
                TokenWrite::DuplicateId if alias && attempts + 1 < ALIAS_ATTEMPTS => {
                    attempts += 1;
                    token.id = self.render_id(&spec, &token.data, now, &mut steps)?;
                    caller.require_on(token.reference(), Permission::TokenCreate)?;
                }
                TokenWrite::DuplicateId => return Err(TokenError::IdTaken),
                TokenWrite::DuplicateFingerprint => {
                    // Lost a race with an identical create: return the winner.
                    if let Some(existing) = self.existing_duplicate(&token, now).await? {
                        caller.require_on(existing.token.reference(), Permission::TokenCreate)?;
                        self.shared
                            .audit(caller, "read", "token", [existing.token.id.as_str()]);
                        return Ok((existing, false));
                    }
                    // The index still holds an expired token the sweep has not deleted yet:
                    // expired tokens are gone at once, so delete that one now and try again.
                    if purged || !self.purge_expired_holders([&token], now).await? {
                        return Err(TokenError::IdenticalExists);
                    }
                    purged = true;
                }
                // The tenant was deleted since the caller was authenticated: its key is gone.
                TokenWrite::Missing => return Err(Error::Unauthenticated.into()),
            }
        }
        // No activity to note: the store counts a token in the month it is created.
        self.shared
            .audit(caller, "create", "token", [token.id.as_str()]);
        tracing::info!(token_type = token.token_type.as_str(), "token created");
        Ok((TokenView { token, shown: None }, true))
    }

    /// Deletes the expired tokens that hold the dedup keys of `tokens` (in their containers):
    /// an expired token never wins deduplication nor blocks a write, whether the sweep has run
    /// or not. Whether there was one.
    pub(super) async fn purge_expired_holders<'t>(
        &self,
        tokens: impl IntoIterator<Item = &'t Token>,
        now: OffsetDateTime,
    ) -> Result<bool, Error> {
        let mut tenant = None;
        let keys: Vec<(String, String)> = tokens
            .into_iter()
            .filter_map(|t| {
                tenant = Some(t.tenant_id);
                Some((t.container.as_str().to_string(), t.fingerprint.clone()?))
            })
            .collect();
        let Some(tenant) = tenant.filter(|_| !keys.is_empty()) else {
            return Ok(false);
        };
        Ok(self
            .store
            .delete_expired_holders(tenant, &keys, now)
            .await?
            > 0)
    }

    pub(super) async fn existing_duplicate(
        &self,
        token: &Token,
        now: OffsetDateTime,
    ) -> Result<Option<TokenView>, Error> {
        let Some(fp) = &token.fingerprint else {
            return Ok(None);
        };
        let found = self
            .store
            .find_by_fingerprint(
                token.tenant_id,
                token.token_type.as_str(),
                token.container.as_str(),
                fp,
                token.fingerprint_expression.clone(),
                now,
            )
            .await?;
        match found {
            Some(stored) => {
                let existing = self.decrypt_token(stored)?;
                Ok(Some(TokenView {
                    token: existing,
                    shown: None,
                }))
            }
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::generated_id;
    use time::{Duration, OffsetDateTime};
    use uuid::Uuid;

    fn at(ms: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap() + Duration::milliseconds(ms)
    }

    fn millis(id: &str) -> u64 {
        let uuid = Uuid::parse_str(id).unwrap();
        assert_eq!(uuid.get_version_num(), 7, "{id}");
        let (secs, nanos) = uuid.get_timestamp().unwrap().to_unix();
        secs * 1000 + u64::from(nanos / 1_000_000)
    }

    #[test]
    fn a_generated_id_is_a_v7_uuid_of_the_creation_millisecond() {
        let id = generated_id(at(5) + Duration::microseconds(700));
        assert_eq!(id.len(), 36);
        assert_eq!(millis(&id), 1_800_000_000_005);
    }

    #[test]
    fn generated_ids_sort_by_creation_time_and_share_no_counter() {
        let first = generated_id(at(0));
        let later = generated_id(at(1));
        assert!(first < later, "{first} < {later}");
        // The same millisecond: the 74 bits after the time are random, not a counter, so two
        // ids of one millisecond differ far beyond their last bits.
        let ids: Vec<u128> = (0..64)
            .map(|_| Uuid::parse_str(&generated_id(at(2))).unwrap().as_u128())
            .collect();
        let mut distinct = ids.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), ids.len());
        let spread = distinct.last().unwrap() - distinct.first().unwrap();
        assert!(spread > 1 << 60, "random bits, not a sequence: {spread:x}");
    }
}
