//! A token's blind index terms (docs/decisions.md §12): its search indexes evaluated on its
//! data and its metadata entries, each hashed under the tenant's search key. Made at create and
//! at every update (data, metadata and indexes may all change), from the same render budget as
//! the token's other expressions; values never leave this function but as hashes.

use crate::error::{Error, ValidationErrors};
use crate::search_index::{check_index_value, data_term_input, metadata_term_input};
use crate::service::Tokens;
use crate::token::Token;

use super::sealing::{render_error, render_sharing};

impl Tokens {
    /// Checks that each search index is an expression the engine accepts.
    pub(super) fn check_search_indexes(&self, indexes: &[String], errors: &mut ValidationErrors) {
        for (i, expr) in indexes.iter().enumerate() {
            self.check_expression(&format!("search_indexes.{i}"), expr, errors);
        }
    }

    /// The terms of `token`, sorted and without repeats; a 400 naming the index that does not
    /// evaluate to one value of 1 to 1024 characters.
    pub(super) fn search_terms_of(
        &self,
        token: &Token,
        steps: &mut u64,
    ) -> Result<Vec<String>, Error> {
        let mut inputs = Vec::with_capacity(token.search_indexes.len() + token.metadata.len());
        for (i, expr) in token.search_indexes.iter().enumerate() {
            let field = format!("search_indexes.{i}");
            let value = render_sharing(self.expressions.as_ref(), expr, &token.data, steps)
                .map_err(|e| render_error(&field, &e))?;
            check_index_value(&value).map_err(|m| Error::invalid(&field, m))?;
            inputs.push(data_term_input(&value));
        }
        for (key, value) in &token.metadata {
            inputs.push(metadata_term_input(key, value));
        }
        let mut terms = inputs
            .iter()
            .map(|input| {
                self.cipher
                    .search_term(token.tenant_id, input)
                    .map_err(|e| Error::internal_from("search term failed", e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        terms.sort_unstable();
        terms.dedup();
        Ok(terms)
    }
}
