//! Token use cases: create, read, update, delete, list, tokenize, detokenize, associations and
//! the usage report. Access is evaluated per token (decisions §4); data is encrypted before it
//! reaches storage and decrypted only to be shown under the caller's transform.

use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;

use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use super::Vault;
use crate::access::Transform;
use crate::auth::Principal;
use crate::container::Container;
use crate::error::{Error, ValidationErrors};
use crate::mask::render_mask;
use crate::page::{Page, PageRequest};
use crate::permission::Permission;
use crate::ports::{TokenFilter, TokenWrite, TypeCount};
use crate::token::{
    IdSpec, NewToken, RawNewToken, RawTokenPatch, StoredToken, Token, check_literal_id,
    mask_expressions,
};
use crate::token_patch::TokenPatch;
use crate::token_type::TokenType;

/// At most this many tokens per detokenize request.
pub const MAX_DETOKENIZE: usize = 100;
/// Activity entries remembered as written, to skip re-writing them within a month.
const MAX_REMEMBERED_ACTIVITY: usize = 1_000_000;
/// Attempts at a unique id from an alias expression.
const ALIAS_ATTEMPTS: usize = 5;

/// A token as a response shows it: `data` only when the caller's transform allows. `Debug`
/// prints neither the data nor what is shown of it.
#[derive(Clone)]
pub struct TokenView {
    /// The token (its `data` field is never shown directly).
    pub token: Token,
    /// What the response carries as `data`.
    pub shown: Option<Value>,
}

impl std::fmt::Debug for TokenView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenView")
            .field("token", &self.token)
            .field("shown", &self.shown.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// The result of tokenize: the request's shape with tokens in place of values.
#[derive(Clone, Debug)]
pub enum Tokenized {
    /// An object with `type` and `data` became this token.
    Token(Box<TokenView>),
    /// A scalar leaf became a `token` with this id.
    Id(String),
    /// An array of results.
    Array(Vec<Tokenized>),
    /// An object of results, keys in request order.
    Object(Vec<(String, Tokenized)>),
    /// Kept as it was (null).
    Keep(Value),
}

/// Tokens read or used, per (tenant, month, token), waiting to be written in one batch.
#[derive(Debug, Default)]
pub struct ActivityBuffer {
    pending: Mutex<HashSet<(Uuid, String, String)>>,
    flushed: Mutex<HashSet<(Uuid, String, String)>>,
}

/// The live usage report.
#[derive(Clone, Debug)]
pub struct UsageReport {
    /// Live tokens per type.
    pub by_type: Vec<TypeCount>,
    /// Distinct tokens active this UTC month.
    pub monthly_active_tokens: u64,
}

fn month_of(t: OffsetDateTime) -> String {
    format!("{:04}-{:02}", t.year(), u8::from(t.month()))
}

fn data_context(tenant_id: Uuid, id: &str, field: &str) -> Vec<u8> {
    format!("tokenvault:token:v1:{tenant_id}:{id}:{field}").into_bytes()
}

/// What a fingerprint hashes: the type, the expression's text and its output, each
/// length-prefixed, so that no choice of expression or data yields another token's input (a
/// hand-made expression never matches the type's default; no planted duplicates).
fn fingerprint_input(token_type: TokenType, expr: &str, rendered: &str) -> Vec<u8> {
    let mut input = b"tokenvault:fingerprint:v2".to_vec();
    for part in [token_type.as_str(), expr, rendered] {
        input.extend_from_slice(&(part.len() as u64).to_be_bytes());
        input.extend_from_slice(part.as_bytes());
    }
    input
}

fn to_json_bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
}

impl Vault {
    // ---- helpers --------------------------------------------------------------------------

    async fn ensure_key(&self, tenant_id: Uuid) -> Result<(), Error> {
        if self.ports.cipher.has_tenant_key(tenant_id) {
            return Ok(());
        }
        let wrapped = if let Some(w) = self.ports.tenants.data_key(tenant_id).await? {
            w
        } else {
            // A tenant made before data keys existed gets one now (first writer wins).
            let fresh = self.ports.cipher.new_tenant_key(tenant_id);
            self.ports
                .tenants
                .replace_data_key(tenant_id, &[], &fresh)
                .await?;
            self.ports
                .tenants
                .data_key(tenant_id)
                .await?
                .ok_or(Error::NotFound)?
        };
        self.ports
            .cipher
            .load_tenant_key(tenant_id, &wrapped)
            .map_err(|e| Error::Internal(format!("cannot unwrap the tenant key: {e}")))
    }

    fn check_expression(&self, field: &str, expr: &str, errors: &mut ValidationErrors) {
        if let Err(why) = self.ports.expressions.check(expr) {
            tracing::debug!(field, reason = %why, "expression refused");
            errors.add(field, "is not a valid expression");
        }
    }

    fn check_mask(&self, mask: &Value, errors: &mut ValidationErrors) {
        let mut exprs = Vec::new();
        mask_expressions(mask, "mask", &mut exprs);
        for (field, expr) in exprs {
            self.check_expression(&field, expr, errors);
        }
    }

    fn encrypt_token(&self, token: &Token, dedup: bool) -> Result<StoredToken, Error> {
        let cipher = &self.ports.cipher;
        let seal = |field: &str, v: &Value| {
            cipher
                .encrypt(
                    token.tenant_id,
                    &data_context(token.tenant_id, &token.id, field),
                    &to_json_bytes(v),
                )
                .map_err(|e| Error::Internal(format!("encryption failed: {e}")))
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
        })
    }

    fn decrypt_token(&self, stored: StoredToken) -> Result<Token, Error> {
        let cipher = &self.ports.cipher;
        let open = |field: &str, ct: &[u8]| -> Result<Value, Error> {
            let bytes = cipher
                .decrypt(
                    stored.tenant_id,
                    &data_context(stored.tenant_id, &stored.id, field),
                    ct,
                )
                .map_err(|e| Error::Internal(format!("token {field} cannot be decrypted: {e}")))?;
            serde_json::from_slice(&bytes)
                .map_err(|_| Error::Internal("stored token is not JSON".into()))
        };
        let corrupt = |what: &str| Error::Internal(format!("stored token has an invalid {what}"));
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
        })
    }

    /// What the caller sees of `token.data` under `transform`.
    fn show(&self, token: &Token, transform: Transform) -> Option<Value> {
        match transform {
            Transform::Reveal => Some(token.data.clone()),
            Transform::Redact => None,
            Transform::Mask => {
                let mask = token
                    .mask
                    .clone()
                    .or_else(|| token.token_type.default_mask())?;
                render_mask(self.ports.expressions.as_ref(), &mask, &token.data)
            }
        }
    }

    fn fingerprint_of(
        &self,
        tenant_id: Uuid,
        token_type: TokenType,
        expr: &str,
        data: &Value,
    ) -> Result<String, Error> {
        let rendered = self.ports.expressions.render(expr, data).map_err(|_| {
            Error::invalid("fingerprint_expression", "cannot be evaluated on this data")
        })?;
        let input = fingerprint_input(token_type, expr, &rendered);
        self.ports
            .cipher
            .fingerprint(tenant_id, &input)
            .map_err(|e| Error::Internal(format!("fingerprint failed: {e}")))
    }

    fn record_active<'a>(&self, tenant_id: Uuid, ids: impl IntoIterator<Item = &'a str>) {
        let month = month_of(self.ports.clock.now());
        let flushed = self
            .activity
            .flushed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut pending = self
            .activity
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for id in ids {
            let entry = (tenant_id, month.clone(), id.to_string());
            if !flushed.contains(&entry) {
                pending.insert(entry);
            }
        }
    }

    /// Background job (and the usage report): writes buffered activity in one batch.
    pub async fn flush_activity(&self) -> Result<usize, Error> {
        let batch: Vec<(Uuid, String, String)> = {
            let mut pending = self
                .activity
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            pending.drain().collect()
        };
        if batch.is_empty() {
            return Ok(0);
        }
        if let Err(e) = self.ports.tokens.record_activity(&batch).await {
            let mut pending = self
                .activity
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            pending.extend(batch);
            return Err(e.into());
        }
        let month = month_of(self.ports.clock.now());
        let mut flushed = self
            .activity
            .flushed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        flushed.retain(|(_, m, _)| *m == month);
        if flushed.len() > MAX_REMEMBERED_ACTIVITY {
            // Only an optimisation (upserts are idempotent): bound the memory it takes.
            flushed.clear();
        }
        let n = batch.len();
        flushed.extend(batch);
        Ok(n)
    }

    /// Turns a validated request into a token (id chosen, expressions checked, fingerprint).
    fn prepare(
        &self,
        caller: &Principal,
        new: NewToken,
        now: OffsetDateTime,
    ) -> Result<(Token, bool), Error> {
        let mut errors = ValidationErrors::new();
        if let Some(mask) = &new.mask {
            self.check_mask(mask, &mut errors);
        }
        if let Some(expr) = &new.fingerprint_expression {
            self.check_expression("fingerprint_expression", expr, &mut errors);
        }
        if let IdSpec::Expression(expr) = &new.id {
            self.check_expression("id", expr, &mut errors);
        }
        errors.into_result(())?;
        let dedup = new
            .deduplicate
            .unwrap_or(caller.settings.deduplicate_tokens);
        let fingerprint = match (
            &new.fingerprint_expression,
            caller.settings.fingerprint_tokens || dedup,
        ) {
            (Some(expr), _) => {
                Some(self.fingerprint_of(caller.tenant_id, new.token_type, expr, &new.data)?)
            }
            (None, true) => Some(self.fingerprint_of(
                caller.tenant_id,
                new.token_type,
                new.token_type.default_fingerprint(),
                &new.data,
            )?),
            (None, false) => None,
        };
        let id = self.render_id(&new.id, &new.data)?;
        Ok((
            Token {
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
            },
            dedup,
        ))
    }

    fn render_id(&self, spec: &IdSpec, data: &Value) -> Result<String, Error> {
        match spec {
            IdSpec::Generated => Ok(Uuid::new_v4().to_string()),
            IdSpec::Literal(id) => Ok(id.clone()),
            IdSpec::Expression(expr) => {
                let id = self
                    .ports
                    .expressions
                    .render(expr, data)
                    .map_err(|_| Error::invalid("id", "cannot be evaluated on this data"))?;
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
    ) -> Result<(TokenView, bool), Error> {
        caller.require(Permission::TokenCreate)?;
        let now = self.ports.clock.now();
        let new = NewToken::parse(raw, now).map_err(Error::Validation)?;
        caller.require_on(&new.container, Permission::TokenCreate)?;
        self.ensure_key(caller.tenant_id).await?;
        let alias = matches!(new.id, IdSpec::Expression(_));
        let spec = new.id.clone();
        let (mut token, dedup) = self.prepare(caller, new, now)?;
        if dedup && let Some(existing) = self.existing_duplicate(&token, now).await? {
            return Ok((existing, false));
        }
        let mut attempts = 0;
        let mut purged = false;
        loop {
            let stored = self.encrypt_token(&token, dedup)?;
            match self.ports.tokens.insert(&stored).await? {
                TokenWrite::Done => break,
                TokenWrite::DuplicateId if alias && attempts + 1 < ALIAS_ATTEMPTS => {
                    attempts += 1;
                    token.id = self.render_id(&spec, &token.data)?;
                }
                TokenWrite::DuplicateId => return Err(Error::Conflict("token id exists".into())),
                TokenWrite::DuplicateFingerprint => {
                    // Lost a race with an identical create: return the winner.
                    if let Some(existing) = self.existing_duplicate(&token, now).await? {
                        return Ok((existing, false));
                    }
                    // The index still holds an expired token the sweep has not deleted yet:
                    // expired tokens are gone at once, so delete them now and try again.
                    if purged {
                        return Err(Error::Conflict("duplicate token".into()));
                    }
                    self.ports.tokens.delete_expired(now).await?;
                    purged = true;
                }
                TokenWrite::Missing => {
                    return Err(Error::Internal("insert reported a missing row".into()));
                }
            }
        }
        self.record_active(caller.tenant_id, [token.id.as_str()]);
        tracing::info!(token_type = token.token_type.as_str(), "token created");
        Ok((TokenView { token, shown: None }, true))
    }

    async fn existing_duplicate(
        &self,
        token: &Token,
        now: OffsetDateTime,
    ) -> Result<Option<TokenView>, Error> {
        let Some(fp) = &token.fingerprint else {
            return Ok(None);
        };
        let found = self
            .ports
            .tokens
            .find_by_fingerprint(
                token.tenant_id,
                token.token_type.as_str(),
                token.container.as_str(),
                fp,
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

    // ---- read -----------------------------------------------------------------------------

    /// The live token `id` if the caller may exercise `permission` on its container (404 when
    /// missing, 403 when not allowed); its data stays encrypted.
    async fn authorize_stored(
        &self,
        caller: &Principal,
        id: &str,
        permission: Permission,
    ) -> Result<StoredToken, Error> {
        let stored = self
            .ports
            .tokens
            .get(caller.tenant_id, id, self.ports.clock.now())
            .await?
            .ok_or(Error::NotFound)?;
        let container = Container::parse(&stored.container)
            .map_err(|_| Error::Internal("stored token has an invalid container".into()))?;
        caller.require_on(&container, permission)?;
        Ok(stored)
    }

    /// `GET /tokens/{id}`.
    pub async fn get_token(&self, caller: &Principal, id: &str) -> Result<TokenView, Error> {
        caller.require(Permission::TokenRead)?;
        // Authorized on the stored row: nothing is decrypted for a caller who may not read it.
        let stored = self
            .authorize_stored(caller, id, Permission::TokenRead)
            .await?;
        self.ensure_key(caller.tenant_id).await?;
        let token = self.decrypt_token(stored)?;
        let transform = caller.require_on(&token.container, Permission::TokenRead)?;
        self.record_active(caller.tenant_id, [token.id.as_str()]);
        let shown = self.show(&token, transform);
        Ok(TokenView { token, shown })
    }

    /// `GET /tokens` and `GET /tokens/{parent}/children`: filtered in the query to the
    /// containers the caller may read.
    pub async fn list_tokens(
        &self,
        caller: &Principal,
        mut filter: TokenFilter,
        page: PageRequest,
    ) -> Result<Page<TokenView>, Error> {
        caller.require(Permission::TokenRead)?;
        let mut errors = ValidationErrors::new();
        check_list_filters(&filter, &mut errors);
        for t in &filter.types {
            if TokenType::parse(t).is_none() {
                errors.add("type", "is not a known token type");
            }
        }
        errors.into_result(())?;
        if let Some(parent) = &filter.parent {
            self.authorize_stored(caller, parent, Permission::TokenRead)
                .await?;
        }
        filter.visibility = caller.visibility(Permission::TokenRead);
        let now = self.ports.clock.now();
        let page = self
            .ports
            .tokens
            .list(caller.tenant_id, &filter, page, now)
            .await?;
        if !page.items.is_empty() {
            self.ensure_key(caller.tenant_id).await?;
        }
        let mut items = Vec::with_capacity(page.items.len());
        for stored in page.items {
            let token = self.decrypt_token(stored)?;
            let Some(transform) = caller.access(&token.container, Permission::TokenRead) else {
                continue; // the query already excludes these; never show one that slipped in
            };
            let shown = self.show(&token, transform);
            items.push(TokenView { token, shown });
        }
        self.record_active(caller.tenant_id, items.iter().map(|v| v.token.id.as_str()));
        Ok(Page {
            items,
            total_items: page.total_items,
            request: page.request,
        })
    }

    // ---- update and delete ------------------------------------------------------------------

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
            .ok_or_else(|| Error::Internal("stored token has an invalid type".into()))?;
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
            && caller.access(&source, Permission::TokenRead) != Some(Transform::Reveal)
        {
            return Err(Error::Forbidden);
        }
        let transform = caller.require_on(&token.container, Permission::TokenUpdate)?;
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
        // The response shows data under the transform that decided the update access.
        let shown = self.show(&token, transform);
        Ok(TokenView { token, shown })
    }

    /// `DELETE /tokens/{id}`: the token and its associations.
    pub async fn delete_token(&self, caller: &Principal, id: &str) -> Result<(), Error> {
        caller.require(Permission::TokenDelete)?;
        self.authorize_stored(caller, id, Permission::TokenDelete)
            .await?;
        if self.ports.tokens.delete(caller.tenant_id, id).await? {
            Ok(())
        } else {
            Err(Error::NotFound)
        }
    }

    /// Background job: deletes expired tokens.
    pub async fn purge_expired_tokens(&self) -> Result<u64, Error> {
        Ok(self
            .ports
            .tokens
            .delete_expired(self.ports.clock.now())
            .await?)
    }

    // ---- tokenize and detokenize ----------------------------------------------------------------

    /// `POST /tokenize`: every object with `type` and `data` becomes a token, every other scalar
    /// leaf a `token`-type token; all or nothing.
    pub async fn tokenize(&self, caller: &Principal, body: Value) -> Result<Tokenized, Error> {
        caller.require(Permission::TokenCreate)?;
        self.ensure_key(caller.tenant_id).await?;
        let now = self.ports.clock.now();
        let mut batch = Vec::new();
        let mut errors = ValidationErrors::new();
        let shape = self.tokenize_value(caller, body, "", now, &mut batch, &mut errors)?;
        errors.into_result(())?;
        let ids: HashSet<&str> = batch.iter().map(|(t, _)| t.id.as_str()).collect();
        if ids.len() != batch.len() {
            return Err(Error::Conflict("duplicate token id in the request".into()));
        }
        let stored = batch
            .iter()
            .map(|(t, dedup)| self.encrypt_token(t, *dedup))
            .collect::<Result<Vec<_>, _>>()?;
        match self.ports.tokens.insert_all(&stored).await? {
            TokenWrite::Done => {}
            TokenWrite::DuplicateId => return Err(Error::Conflict("token id exists".into())),
            _ => return Err(Error::Conflict("an identical token exists".into())),
        }
        self.record_active(caller.tenant_id, batch.iter().map(|(t, _)| t.id.as_str()));
        Ok(shape)
    }

    fn tokenize_value(
        &self,
        caller: &Principal,
        value: Value,
        path: &str,
        now: OffsetDateTime,
        batch: &mut Vec<(Token, bool)>,
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
                        caller.require_on(&new.container, Permission::TokenCreate)?;
                        too_many(batch)?;
                        let (token, dedup) = self
                            .prepare(caller, new, now)
                            .map_err(|e| prefix_error(e, path))?;
                        batch.push((token.clone(), dedup));
                        Ok(Tokenized::Token(Box::new(TokenView { token, shown: None })))
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
                caller.require_on(&new.container, Permission::TokenCreate)?;
                too_many(batch)?;
                let (token, dedup) = self.prepare(caller, new, now)?;
                let id = token.id.clone();
                batch.push((token, dedup));
                Ok(Tokenized::Id(id))
            }
        }
    }

    /// `POST /detokenize`: `{{ id }}` expressions replaced by the data the caller may read.
    pub async fn detokenize(&self, caller: &Principal, body: Value) -> Result<Value, Error> {
        caller.require(Permission::TokenRead)?;
        let mut ids = Vec::new();
        collect_expressions(&body, &mut ids);
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
                .map_err(|_| Error::Internal("stored token has an invalid container".into()))?;
            transforms.push(caller.require_on(&container, Permission::TokenRead)?);
        }
        self.ensure_key(caller.tenant_id).await?;
        let mut values = BTreeMap::new();
        for (stored, transform) in found.into_iter().zip(transforms) {
            let token = self.decrypt_token(stored)?;
            let shown = self.show(&token, transform).ok_or(Error::Forbidden)?;
            values.insert(token.id.clone(), shown);
        }
        self.record_active(caller.tenant_id, values.keys().map(String::as_str));
        Ok(substitute(body, &values))
    }

    // ---- associations -------------------------------------------------------------------------

    /// `POST /tokens/{parent}/children/{child}`: `token:read` on both.
    pub async fn associate(
        &self,
        caller: &Principal,
        parent: &str,
        child: &str,
    ) -> Result<(), Error> {
        caller.require(Permission::TokenRead)?;
        for id in [parent, child] {
            self.authorize_stored(caller, id, Permission::TokenRead)
                .await?;
        }
        match self
            .ports
            .tokens
            .associate(caller.tenant_id, parent, child)
            .await?
        {
            TokenWrite::Done => Ok(()),
            TokenWrite::Missing => Err(Error::NotFound),
            _ => Err(Error::Conflict("association exists".into())),
        }
    }

    /// `DELETE /tokens/{parent}/children/{child}`.
    pub async fn dissociate(
        &self,
        caller: &Principal,
        parent: &str,
        child: &str,
    ) -> Result<(), Error> {
        caller.require(Permission::TokenDelete)?;
        self.authorize_stored(caller, parent, Permission::TokenDelete)
            .await?;
        if self
            .ports
            .tokens
            .dissociate(caller.tenant_id, parent, child)
            .await?
        {
            Ok(())
        } else {
            Err(Error::NotFound)
        }
    }

    /// `POST /tokens/{parent}/children`: `token:create` for the child, `token:read` on the parent.
    pub async fn create_child(
        &self,
        caller: &Principal,
        parent: &str,
        raw: RawNewToken,
    ) -> Result<TokenView, Error> {
        caller.require(Permission::TokenCreate)?;
        caller.require(Permission::TokenRead)?;
        self.authorize_stored(caller, parent, Permission::TokenRead)
            .await?;
        let (child, _) = self.create_token(caller, raw).await?;
        match self
            .ports
            .tokens
            .associate(caller.tenant_id, parent, &child.token.id)
            .await?
        {
            TokenWrite::Done | TokenWrite::DuplicateId => Ok(child),
            TokenWrite::Missing => Err(Error::NotFound),
            TokenWrite::DuplicateFingerprint => {
                Err(Error::Internal("unexpected association result".into()))
            }
        }
    }

    // ---- usage ----------------------------------------------------------------------------------

    /// `GET /tenants/self/reports/usage` (decisions §10).
    pub async fn usage_report(&self, caller: &Principal) -> Result<UsageReport, Error> {
        caller.require(Permission::ReportRead)?;
        if let Err(e) = self.flush_activity().await {
            tracing::warn!(error = %e, "activity flush before the report failed");
        }
        let now = self.ports.clock.now();
        let by_type = self
            .ports
            .tokens
            .count_by_type(caller.tenant_id, now)
            .await?;
        let monthly_active_tokens = self
            .ports
            .tokens
            .count_active(caller.tenant_id, &month_of(now))
            .await?;
        Ok(UsageReport {
            by_type,
            monthly_active_tokens,
        })
    }
}

/// At most this many `id` values in one list filter (docs/decisions.md §6).
pub const MAX_ID_FILTERS: usize = 100;
/// At most this many `type` values in one list filter.
pub const MAX_TYPE_FILTERS: usize = 20;
/// At most this many `metadata.<key>` filters in one list.
pub const MAX_METADATA_FILTERS: usize = 20;
/// At most this many tokens in one `POST /tokenize`.
pub const MAX_TOKENIZE: usize = 1_000;

/// Bounds every list filter before a query is built from it (each value is a bound parameter).
fn check_list_filters(filter: &TokenFilter, errors: &mut ValidationErrors) {
    if filter.ids.len() > MAX_ID_FILTERS {
        errors.add("id", "at most 100 values");
    }
    if filter.types.len() > MAX_TYPE_FILTERS {
        errors.add("type", "at most 20 values");
    }
    if filter.metadata.len() > MAX_METADATA_FILTERS {
        errors.add("metadata", "at most 20 filters");
    }
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

/// Parses `{{ id }}` occurrences in a string: (start, end, id) triples.
fn expressions_in(s: &str) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(open) = s[from..].find("{{").map(|i| i + from) {
        let Some(close) = s[open + 2..].find("}}").map(|i| i + open + 2) else {
            break;
        };
        let id = s[open + 2..close].trim();
        if !id.is_empty() && check_literal_id(id).is_ok() {
            out.push((open, close + 2, id.to_string()));
        }
        from = close + 2;
    }
    out
}

fn collect_expressions(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.extend(expressions_in(s).into_iter().map(|(_, _, id)| id)),
        Value::Array(items) => items.iter().for_each(|i| collect_expressions(i, out)),
        Value::Object(map) => map.values().for_each(|i| collect_expressions(i, out)),
        _ => {}
    }
}

fn substitute(v: Value, values: &BTreeMap<String, Value>) -> Value {
    match v {
        Value::String(s) => {
            let found = expressions_in(&s);
            if let [(0, end, id)] = found.as_slice()
                && *end == s.len()
            {
                return values.get(id).cloned().unwrap_or(Value::String(s));
            }
            if found.is_empty() {
                return Value::String(s);
            }
            let mut out = String::with_capacity(s.len());
            let mut last = 0;
            for (start, end, id) in found {
                out.push_str(&s[last..start]);
                match values.get(&id) {
                    Some(Value::String(text)) => out.push_str(text),
                    Some(other) => out.push_str(&other.to_string()),
                    None => out.push_str(&s[start..end]),
                }
                last = end;
            }
            out.push_str(&s[last..]);
            Value::String(out)
        }
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|i| substitute(i, values)).collect())
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, i)| (k, substitute(i, values)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expressions_are_found_and_substituted() {
        let values: BTreeMap<String, Value> = [
            ("abc".to_string(), json!("secret")),
            ("obj".to_string(), json!({"n": 1})),
        ]
        .into();
        let body = json!({"a": "{{ abc }}", "b": ["x {{abc}} y {{ obj }}"], "c": "{{obj}}", "d": 5, "e": "{{ nope"});
        let out = substitute(body, &values);
        assert_eq!(
            out,
            json!({"a": "secret", "b": ["x secret y {\"n\":1}"], "c": {"n": 1}, "d": 5, "e": "{{ nope"})
        );
        let mut ids = Vec::new();
        collect_expressions(&json!(["{{ a1b }}", {"k": "{{ a/b }}"}]), &mut ids);
        assert_eq!(ids, vec!["a1b".to_string()]);
    }

    #[test]
    fn months_are_utc_calendar_months() {
        let t = OffsetDateTime::from_unix_timestamp(1_801_000_000).unwrap();
        assert_eq!(month_of(t), "2027-01");
    }
}
