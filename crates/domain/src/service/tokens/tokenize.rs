//! `POST /tokenize`: any JSON, tokens in place of values, all or nothing, at most
//! [`MAX_TOKENIZE`] tokens.

use super::{MAX_TOKENIZE, TokenView, Tokenized};
use crate::area_error::TokenError;
use crate::auth::Principal;
use crate::error::{Error, ValidationErrors};
use crate::permission::Permission;
use crate::ports::{RESPONSE_RENDER_STEPS, TokenWrite};
use crate::service::Tokens;
use crate::token::Token;
use crate::token_new::{NewToken, RawNewToken};
use crate::token_type::TokenType;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use time::OffsetDateTime;

impl Tokens {
    /// `POST /tokenize`: every object with `type` and `data` becomes a token, every other scalar
    /// leaf a `token`-type token; all or nothing.
    pub async fn tokenize(&self, caller: &Principal, body: Value) -> Result<Tokenized, TokenError> {
        caller.require(Permission::TokenCreate)?;
        self.shared.ensure_key(caller.tenant_id).await?;
        let now = self.clock.now();
        let mut batch = Batch {
            tokens: Vec::new(),
            steps: RESPONSE_RENDER_STEPS,
        };
        let mut errors = ValidationErrors::new();
        let shape = self.tokenize_value(caller, body, "", now, &mut batch, &mut errors)?;
        let batch = batch.tokens;
        errors.into_result(())?;
        let ids: HashSet<&str> = batch.iter().map(|(t, _)| t.id.as_str()).collect();
        if ids.len() != batch.len() {
            return Err(TokenError::IdRepeated);
        }
        let (fresh, existing) = self.deduplicate(batch, now).await?;
        for view in existing.values() {
            caller.require_on(view.token.reference(), Permission::TokenCreate)?;
        }
        let stored = fresh
            .iter()
            .map(|(t, dedup)| self.encrypt_token(t, *dedup))
            .collect::<Result<Vec<_>, _>>()?;
        let mut purged = false;
        loop {
            match self.store.insert_all(&stored).await? {
                TokenWrite::Done => break,
                TokenWrite::DuplicateId => {
                    return Err(TokenError::IdTaken);
                }
                // The tenant was deleted since the caller was authenticated: its key is gone.
                TokenWrite::Missing => return Err(Error::Unauthenticated.into()),
                // An expired token still in the index (the sweep has not run): it is gone
                // already, so it is deleted and the request tried again, once.
                TokenWrite::DuplicateFingerprint
                    if !purged
                        && self
                            .purge_expired_holders(
                                fresh.iter().filter(|(_, d)| *d).map(|(t, _)| t),
                                now,
                            )
                            .await? =>
                {
                    purged = true;
                }
                TokenWrite::DuplicateFingerprint => {
                    return Err(TokenError::IdenticalExists);
                }
            }
        }
        // The fresh tokens are counted by the store from their creation.
        let active = existing
            .values()
            .map(|v| (v.token.id.as_str(), v.token.created_at));
        self.shared.record_active(caller.tenant_id, active);
        self.shared.audit(
            caller,
            "create",
            "token",
            fresh.iter().map(|(t, _)| t.id.as_str()),
        );
        self.shared.audit(
            caller,
            "read",
            "token",
            existing.values().map(|v| v.token.id.as_str()),
        );
        let mut steps = RESPONSE_RENDER_STEPS;
        let mut show = |sent: &TokenView, found: &TokenView| {
            // A deduplicated item shows the value the caller sent (under the transform of the
            // token it became), never the stored token's: nothing but its id is told of that.
            let shown = caller
                .access(found.token.reference(), Permission::TokenCreate)
                .and_then(|transform| self.show_sharing(&sent.token, transform, &mut steps));
            TokenView {
                token: found.token.clone(),
                shown,
            }
        };
        Ok(in_place_of(shape, &existing, &mut show))
    }

    /// Deduplication as for `POST /tokens`: a deduplicated item whose value already exists in
    /// its container — stored, or earlier in this request — becomes that token. Returns the
    /// tokens to insert and, by the id each item was given, the token that replaces it.
    async fn deduplicate(
        &self,
        batch: Vec<(Token, bool)>,
        now: OffsetDateTime,
    ) -> Result<(Vec<(Token, bool)>, HashMap<String, TokenView>), Error> {
        let mut fresh = Vec::with_capacity(batch.len());
        let mut existing = HashMap::new();
        let mut first: HashMap<(TokenType, String, String), TokenView> = HashMap::new();
        for (token, dedup) in batch {
            let Some(fp) = token.fingerprint.clone().filter(|_| dedup) else {
                fresh.push((token, dedup));
                continue;
            };
            let key = (token.token_type, token.container.as_str().to_string(), fp);
            if let Some(view) = first.get(&key) {
                existing.insert(token.id.clone(), view.clone());
            } else if let Some(view) = self.existing_duplicate(&token, now).await? {
                first.insert(key, view.clone());
                existing.insert(token.id.clone(), view);
            } else {
                first.insert(
                    key,
                    TokenView {
                        token: token.clone(),
                        shown: None,
                    },
                );
                fresh.push((token, dedup));
            }
        }
        Ok((fresh, existing))
    }

    fn tokenize_value(
        &self,
        caller: &Principal,
        value: Value,
        path: &str,
        now: OffsetDateTime,
        batch: &mut Batch,
        errors: &mut ValidationErrors,
    ) -> Result<Tokenized, Error> {
        let field = |k: &str| {
            if path.is_empty() {
                k.to_string()
            } else {
                format!("{path}.{k}")
            }
        };
        match value {
            Value::Object(map) if map.contains_key("type") && map.contains_key("data") => {
                let raw = match RawNewToken::from_object(&map) {
                    Ok(raw) => raw,
                    Err(e) => {
                        for (f, msgs) in e.fields() {
                            for m in msgs {
                                errors.add(field(f), m.clone());
                            }
                        }
                        return Ok(Tokenized::Keep(Value::Null));
                    }
                };
                match NewToken::parse(raw, now) {
                    Ok(new) => {
                        too_many(&batch.tokens)?;
                        let (token, dedup) = self
                            .prepare(caller, new, now, &mut batch.steps)
                            .map_err(|e| prefix_error(e, path))?;
                        let transform =
                            caller.require_on(token.reference(), Permission::TokenCreate)?;
                        // What the caller sent, as the token would read under its create
                        // transform (decisions §12); the fingerprint is of that value too.
                        let shown = self.show_sharing(&token, transform, &mut batch.steps);
                        batch.tokens.push((token.clone(), dedup));
                        Ok(Tokenized::Token(Box::new(TokenView { token, shown })))
                    }
                    Err(e) => {
                        for (f, msgs) in e.fields() {
                            for m in msgs {
                                errors.add(field(f), m.clone());
                            }
                        }
                        Ok(Tokenized::Keep(Value::Null))
                    }
                }
            }
            Value::Object(map) => {
                let mut out = Vec::with_capacity(map.len());
                for (k, v) in map {
                    let child = self.tokenize_value(caller, v, &field(&k), now, batch, errors)?;
                    out.push((k, child));
                }
                Ok(Tokenized::Object(out))
            }
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, v) in items.into_iter().enumerate() {
                    out.push(self.tokenize_value(
                        caller,
                        v,
                        &field(&i.to_string()),
                        now,
                        batch,
                        errors,
                    )?);
                }
                Ok(Tokenized::Array(out))
            }
            Value::Null => Ok(Tokenized::Keep(Value::Null)),
            leaf => {
                let new = NewToken::parse(
                    RawNewToken {
                        token_type: Some("token".into()),
                        data: Some(leaf),
                        ..RawNewToken::default()
                    },
                    now,
                )
                .map_err(Error::Validation)?;
                too_many(&batch.tokens)?;
                let (token, dedup) = self.prepare(caller, new, now, &mut batch.steps)?;
                caller.require_on(token.reference(), Permission::TokenCreate)?;
                let id = token.id.clone();
                batch.tokens.push((token, dedup));
                Ok(Tokenized::Id(id))
            }
        }
    }
}

/// The tokens one request makes, and what is left of the work their expressions may do
/// together (docs/decisions.md §6).
struct Batch {
    tokens: Vec<(Token, bool)>,
    steps: u64,
}

/// Refuses a tokenize request once it holds [`MAX_TOKENIZE`] tokens, before any more work.
fn too_many(batch: &[(Token, bool)]) -> Result<(), Error> {
    if batch.len() >= MAX_TOKENIZE {
        return Err(Error::invalid(
            "body",
            "at most 1000 tokens can be created in one request",
        ));
    }
    Ok(())
}

fn prefix_error(e: Error, path: &str) -> Error {
    match e {
        Error::Validation(v) if !path.is_empty() => {
            let mut out = ValidationErrors::new();
            for (f, msgs) in v.fields() {
                for m in msgs {
                    out.add(format!("{path}.{f}"), m.clone());
                }
            }
            Error::Validation(out)
        }
        other => other,
    }
}

/// The request's shape with each deduplicated item replaced by the token it matched, as
/// `show` makes it from the item sent and the token found.
fn in_place_of(
    shape: Tokenized,
    existing: &HashMap<String, TokenView>,
    show: &mut dyn FnMut(&TokenView, &TokenView) -> TokenView,
) -> Tokenized {
    match shape {
        Tokenized::Token(view) => match existing.get(&view.token.id) {
            Some(found) => Tokenized::Token(Box::new(show(&view, found))),
            None => Tokenized::Token(view),
        },
        Tokenized::Id(id) => match existing.get(&id) {
            Some(found) => Tokenized::Id(found.token.id.clone()),
            None => Tokenized::Id(id),
        },
        Tokenized::Array(items) => Tokenized::Array(
            items
                .into_iter()
                .map(|i| in_place_of(i, existing, show))
                .collect(),
        ),
        Tokenized::Object(fields) => Tokenized::Object(
            fields
                .into_iter()
                .map(|(k, v)| (k, in_place_of(v, existing, show)))
                .collect(),
        ),
        keep @ Tokenized::Keep(_) => keep,
    }
}
