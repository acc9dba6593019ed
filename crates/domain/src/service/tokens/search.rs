//! `POST /tokens/search` (docs/decisions.md §12): a query of the search language
//! (`search_query/`) answered like `GET /tokens`, each token under the caller's
//! `token:search` transform. The query's `data` and `metadata` values become blind index terms
//! here, so storage never sees them; which tokens the caller may search is decided in the same
//! statement as the match (the hash lookup runs the same way whatever the caller may see, and
//! a total counts only what it may see), so a search never tells whether a token it may not
//! search holds a value.

use super::TokenView;
use crate::auth::Principal;
use crate::error::Error;
use crate::page::{Page, PageRequest};
use crate::permission::Permission;
use crate::ports::{SearchCondition, Visibility};
use crate::search_index::{data_term_input, metadata_term_input};
use crate::search_query::{ContainerMatch, Expr, Query, Term};
use crate::service::PrefetchedSearch;
use crate::service::Tokens;
use crate::token::StoredToken;
use uuid::Uuid;

impl Tokens {
    /// `POST /tokens/search`: a page of the tokens matching `query` that the caller may search,
    /// newest first (`token:search`); a query that does not parse is a 400 naming `query`
    /// and the position.
    ///
    /// `prefetched`: the condition made, and the matches read with the caller's key
    /// ([`crate::service::Authenticator::authenticate_searching`]), used only when made for
    /// this tenant and query; the matches only when the caller's visibility is decided by
    /// container alone.
    pub async fn search_tokens(
        &self,
        caller: &Principal,
        query: &str,
        page: PageRequest,
        prefetched: Option<PrefetchedSearch>,
    ) -> Result<Page<TokenView>, Error> {
        caller.require(Permission::TokenSearch)?;
        let visibility = caller.visibility(Permission::TokenSearch);
        // Made with the key for this tenant and query: it parsed, names no fingerprint, and
        // its values are hashed already (`authenticate/searching.rs`).
        let (condition, rows) = match prefetched.and_then(|p| p.read_for(caller.tenant_id, query)) {
            Some(read) => (Some(read.condition), read.rows),
            None => (self.condition_for(caller, query).await?, None),
        };
        let found = match rows.and_then(|rows| visible_page(rows, &visibility, page)) {
            Some(found) => found,
            None => {
                self.store
                    .search(
                        caller.tenant_id,
                        condition,
                        &visibility,
                        page,
                        self.clock.now(),
                    )
                    .await?
            }
        };
        // Every search is in the log, a miss too (its answer tells whether a value is held):
        // who searched and when, the token collection as its entity; never the query, whose
        // values may be secret. The tokens on the page are logged as read besides.
        self.shared.audit(caller, "search", "token", ["*"]);
        self.views_of_page(caller, found, Permission::TokenSearch)
            .await
    }

    /// The store's condition for `query` (`None`: every token), its values hashed under the
    /// tenant's search key; a query that does not parse is a 400 naming `query` and the
    /// position, a fingerprint a 403 unless the caller sees every token it may search revealed.
    async fn condition_for(
        &self,
        caller: &Principal,
        query: &str,
    ) -> Result<Option<SearchCondition>, Error> {
        let parsed = Query::parse(query).map_err(|e| Error::invalid("query", e.to_string()))?;
        // A fingerprint is shown only under `reveal` (docs/decisions.md §6): compared with
        // the fingerprint a create answers for a guessed value, a match would confirm the
        // guess. So only a caller that sees every token it may search revealed may search by
        // one (403 otherwise, before anything is read).
        if let Query::Expr(expr) = &parsed
            && expr
                .terms()
                .iter()
                .any(|t| matches!(t, Term::Fingerprint(_)))
            && !caller.reveals_all(Permission::TokenSearch)
        {
            return Err(Error::Forbidden);
        }
        match &parsed {
            Query::All => Ok(None),
            Query::Expr(expr) => {
                self.shared.ensure_key(caller.tenant_id).await?;
                Ok(Some(self.condition_of(caller.tenant_id, expr)?))
            }
        }
    }

    /// The store's condition for `query` in `tenant_id`, when it is worth reading with the key
    /// (`authenticate/searching.rs`): a query that parses, whose matches are found through
    /// blind index terms or ids ([`SearchCondition::found_through_terms`], so they are few),
    /// and that names no fingerprint (only some callers may search by one).
    pub(in crate::service) async fn read_ahead_condition(
        &self,
        tenant_id: Uuid,
        query: &str,
    ) -> Option<SearchCondition> {
        let Ok(Query::Expr(expr)) = Query::parse(query) else {
            return None;
        };
        if expr
            .terms()
            .iter()
            .any(|t| matches!(t, Term::Fingerprint(_)))
        {
            return None;
        }
        self.shared.ensure_key(tenant_id).await.ok()?;
        self.condition_of(tenant_id, &expr)
            .ok()
            .filter(SearchCondition::found_through_terms)
    }

    /// The store's condition for `expr`, its values hashed under the tenant's search key.
    fn condition_of(&self, tenant_id: Uuid, expr: &Expr) -> Result<SearchCondition, Error> {
        let all = |items: &[Expr]| -> Result<Vec<SearchCondition>, Error> {
            items
                .iter()
                .map(|e| self.condition_of(tenant_id, e))
                .collect()
        };
        Ok(match expr {
            Expr::And(items) => SearchCondition::All(all(items)?),
            Expr::Or(items) => SearchCondition::Any(all(items)?),
            Expr::Not(inner) => {
                SearchCondition::Not(Box::new(self.condition_of(tenant_id, inner)?))
            }
            Expr::Term(term) => self.term_condition(tenant_id, term)?,
        })
    }

    fn term_condition(&self, tenant_id: Uuid, term: &Term) -> Result<SearchCondition, Error> {
        let hashed = |input: Vec<u8>| {
            self.cipher
                .search_term(tenant_id, &input)
                .map(SearchCondition::Term)
                .map_err(|e| Error::internal_from("search term failed", e))
        };
        Ok(match term {
            Term::Id(id) => SearchCondition::Id(id.clone()),
            Term::Type(t) => SearchCondition::Type(t.as_str().to_string()),
            Term::Data(value) => hashed(data_term_input(value))?,
            Term::Metadata { key, value } => hashed(metadata_term_input(key, value))?,
            Term::Fingerprint(fp) => SearchCondition::Fingerprint(fp.clone()),
            Term::Container(ContainerMatch::Exact(c)) => {
                SearchCondition::Container(c.as_str().to_string())
            }
            Term::Container(ContainerMatch::Subtree(c)) => {
                SearchCondition::ContainerUnder(c.as_str().to_string())
            }
            Term::CreatedBy(id) => SearchCondition::CreatedBy(*id),
            Term::ModifiedBy(id) => SearchCondition::ModifiedBy(*id),
            Term::CreatedAt(range) => SearchCondition::CreatedAt(*range),
            Term::ModifiedAt(range) => SearchCondition::ModifiedAt(*range),
        })
    }
}

/// The page of `rows` (every match, newest first) that `visibility` admits, and their total;
/// `None` when a row's visibility depends on more than its container (the store decides).
fn visible_page(
    rows: Vec<StoredToken>,
    visibility: &Visibility,
    page: PageRequest,
) -> Option<Page<StoredToken>> {
    let mut visible = Vec::with_capacity(rows.len());
    for row in rows {
        if visibility.admits_container(&row.container)? {
            visible.push(row);
        }
    }
    let total_items = u64::try_from(visible.len()).ok()?;
    let items = visible
        .into_iter()
        .skip(usize::try_from(page.offset()).ok()?)
        .take(usize::try_from(page.size).ok()?)
        .collect();
    Some(Page {
        items,
        total_items,
        request: page,
    })
}
