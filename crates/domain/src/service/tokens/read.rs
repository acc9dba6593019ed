//! `GET /tokens/{id}` and the lists (`GET /tokens`, children), filtered in the query to the
//! containers the caller may read.

use super::TokenView;
use crate::access::TokenRef;
use crate::auth::Principal;
use crate::container::Container;
use crate::error::{Error, ValidationErrors};
use crate::page::{Page, PageRequest};
use crate::permission::Permission;
use crate::ports::RESPONSE_RENDER_STEPS;
use crate::ports::TokenFilter;
use crate::service::Tokens;
use crate::service::authenticate::prefetched::PrefetchedToken;
use crate::token::StoredToken;
use crate::token_type::TokenType;

impl Tokens {
    /// The live token `id` if the caller may exercise `permission` on its container (404 when
    /// missing, 403 when not allowed); its data stays encrypted.
    pub(super) async fn authorize_stored(
        &self,
        caller: &Principal,
        id: &str,
        permission: Permission,
    ) -> Result<StoredToken, Error> {
        if !may_be_stored(id) {
            return Err(Error::NotFound);
        }
        let stored = self
            .store
            .get(caller.tenant_id, id, self.clock.now())
            .await?;
        Self::authorize_row(caller, stored, permission)
    }

    /// The decision of [`Self::authorize_stored`] on a row already read.
    fn authorize_row(
        caller: &Principal,
        stored: Option<StoredToken>,
        permission: Permission,
    ) -> Result<StoredToken, Error> {
        let stored = stored.ok_or(Error::NotFound)?;
        let container = Container::parse(&stored.container)
            .map_err(|_| Error::internal("stored token has an invalid container"))?;
        caller.require_on(
            TokenRef {
                id: &stored.id,
                container: &container,
            },
            permission,
        )?;
        Ok(stored)
    }

    /// `GET /tokens/{id}`.
    pub async fn get_token(&self, caller: &Principal, id: &str) -> Result<TokenView, Error> {
        self.get_token_prefetched(caller, id, None).await
    }

    /// `GET /tokens/{id}` with the row read together with the caller's key
    /// ([`crate::service::Authenticator::authenticate_reading`]); read again when it was read
    /// for another tenant or id.
    pub async fn get_token_prefetched(
        &self,
        caller: &Principal,
        id: &str,
        prefetched: Option<PrefetchedToken>,
    ) -> Result<TokenView, Error> {
        caller.require(Permission::TokenRead)?;
        // Authorized on the stored row: nothing is decrypted for a caller who may not read it.
        let stored = match prefetched.and_then(|p| p.read_for(caller.tenant_id, id)) {
            Some(row) => Self::authorize_row(caller, row, Permission::TokenRead)?,
            None => {
                self.authorize_stored(caller, id, Permission::TokenRead)
                    .await?
            }
        };
        self.shared.ensure_key(caller.tenant_id).await?;
        let token = self.decrypt_token(stored)?;
        let transform = caller.require_on(token.reference(), Permission::TokenRead)?;
        self.shared
            .record_active(caller.tenant_id, [(token.id.as_str(), token.created_at)]);
        self.shared
            .audit(caller, "read", "token", [token.id.as_str()]);
        Ok(self.token_view(token, transform))
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
        let now = self.clock.now();
        let page = self
            .store
            .list(caller.tenant_id, &filter, page, now)
            .await?;
        self.views_of_page(caller, page, Permission::TokenRead)
            .await
    }

    /// A page of stored tokens as the caller sees them under `permission`'s transform (each
    /// decided again here), counted as read in the usage report and the audit log.
    pub(super) async fn views_of_page(
        &self,
        caller: &Principal,
        page: Page<StoredToken>,
        permission: Permission,
    ) -> Result<Page<TokenView>, Error> {
        if !page.items.is_empty() {
            self.shared.ensure_key(caller.tenant_id).await?;
        }
        let mut items = Vec::with_capacity(page.items.len());
        let mut steps = RESPONSE_RENDER_STEPS;
        for stored in page.items {
            let token = self.decrypt_token(stored)?;
            let Some(transform) = caller.access(token.reference(), permission) else {
                continue; // the query already excludes these; never show one that slipped in
            };
            items.push(self.token_view_sharing(token, transform, &mut steps));
        }
        self.shared.record_active(
            caller.tenant_id,
            items
                .iter()
                .map(|v| (v.token.id.as_str(), v.token.created_at)),
        );
        self.shared.audit(
            caller,
            "read",
            "token",
            items.iter().map(|v| v.token.id.as_str()),
        );
        Ok(Page {
            items,
            total_items: page.total_items,
            request: page.request,
        })
    }
}

/// Whether `id` could name a stored token: no token id holds a control character (a NUL would
/// even be refused by PostgreSQL as a parameter, a 500 instead of a 404).
pub(crate) fn may_be_stored(id: &str) -> bool {
    !id.chars().any(char::is_control)
}

/// At most this many `id` values in one list filter (docs/decisions.md §6).
pub const MAX_ID_FILTERS: usize = 100;
/// At most this many `type` values in one list filter.
pub const MAX_TYPE_FILTERS: usize = 20;
/// At most this many `metadata.<key>` filters in one list.
pub const MAX_METADATA_FILTERS: usize = 20;

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
