//! `POST /tokens/search` (docs/decisions.md §12): a query of the search language
//! (`search_query.rs`) answered like `GET /tokens`, each token under the caller's
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
use crate::ports::SearchCondition;
use crate::search_index::{data_term_input, metadata_term_input};
use crate::search_query::{ContainerMatch, Expr, Query, Term};
use crate::service::Tokens;
use uuid::Uuid;

impl Tokens {
    /// `POST /tokens/search`: a page of the tokens matching `query` that the caller may search,
    /// newest first (`token:search`); a query that does not parse is a 400 naming `query`
    /// and the position.
    pub async fn search_tokens(
        &self,
        caller: &Principal,
        query: &str,
        page: PageRequest,
    ) -> Result<Page<TokenView>, Error> {
        caller.require(Permission::TokenSearch)?;
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
        let condition = match &parsed {
            Query::All => None,
            Query::Expr(expr) => {
                self.shared.ensure_key(caller.tenant_id).await?;
                Some(self.condition_of(caller.tenant_id, expr)?)
            }
        };
        let visibility = caller.visibility(Permission::TokenSearch);
        let found = self
            .store
            .search(
                caller.tenant_id,
                condition,
                &visibility,
                page,
                self.clock.now(),
            )
            .await?;
        // Every search is in the log, a miss too (its answer tells whether a value is held):
        // who searched and when, the token collection as its entity; never the query, whose
        // values may be secret. The tokens on the page are logged as read besides.
        self.shared.audit(caller, "search", "token", ["*"]);
        self.views_of_page(caller, found, Permission::TokenSearch)
            .await
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
