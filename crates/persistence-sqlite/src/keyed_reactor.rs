//! SQLite's key-and-reactor read (`keyed_reactor.rs`): one statement on the calling thread.

use std::sync::LazyLock;

use rusqlite::params;
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::{Beside, KeyRead};
use uuid::Uuid;

use crate::direct::{DirectReads, bound_time};
use tokenvault_persistence_shared::entity::{application, formula, reactor, token};
use tokenvault_persistence_shared::keyed_reactor::with_reactor;
use tokenvault_persistence_shared::rows::reactor::{formula_to_domain, reactor_to_domain};
use tokenvault_persistence_shared::rows::tenant::{settings_columns, settings_from_sqlite};
use tokenvault_persistence_shared::rows::{self, Fields, columns};

/// SQLite's form of the statement: the codecs read its columns by position (`rows/mod.rs`),
/// the token's before the reactor's, whose formula is read only when the reactor was found.
static KEY_AND_REACTOR_SQLITE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {}, {}, {}, {}, {} \
         FROM applications a JOIN tenants s ON s.id = a.tenant_id \
         LEFT JOIN tokens t ON a.app_type = 'private' AND t.tenant_id = a.tenant_id \
         AND t.id = ?3 AND (t.expires_at IS NULL OR t.expires_at > ?4) \
         LEFT JOIN reactors r ON a.app_type = 'private' AND r.tenant_id = a.tenant_id \
         AND r.id = ?2 \
         LEFT JOIN reactor_formulas f ON f.tenant_id = r.tenant_id AND f.id = r.formula_id \
         WHERE a.key_hash = ?1 AND s.deleted_at IS NULL",
        columns::<application::Column>(Some("a"), &[]),
        settings_columns("s", None),
        columns::<token::Column>(Some("t"), &[]),
        columns::<reactor::Column>(Some("r"), &[]),
        columns::<formula::Column>(Some("f"), &[]),
    )
});

/// The key's application, its tenant's settings, that tenant's reactor `reactor_id` with
/// its formula and its live token `token_id`, in one statement on a SQLite file's direct
/// connection; `None` when the file was locked (the caller then reads the key alone).
pub(crate) fn key_and_reactor(
    direct: &DirectReads,
    key_hash: &str,
    reactor_id: Uuid,
    token_id: Option<&str>,
    now: OffsetDateTime,
) -> Option<Result<Option<KeyRead>, RepoError>> {
    let now = match bound_time(now) {
        Ok(now) => now,
        Err(e) => return Some(Err(e)),
    };
    let found = direct.one(
        KEY_AND_REACTOR_SQLITE.as_str(),
        params![key_hash, &reactor_id.as_bytes()[..], token_id, now],
        |row| {
            let mut f = Fields::new(row, 0);
            let app = rows::application::from_sqlite(&mut f)?;
            let settings = settings_from_sqlite(&mut f)?;
            // Nothing joined: the primary key's columns (the first two) are NULL.
            let token = if f.is_null_ahead(1)? {
                f.skip::<token::Column>();
                None
            } else {
                Some(rows::token::from_sqlite(&mut f)?)
            };
            if f.is_null_ahead(1)? {
                return Ok((app, settings, token, None));
            }
            let reactor = rows::reactor::reactor_from_sqlite(&mut f)?;
            let formula = if f.is_null_ahead(1)? {
                None
            } else {
                Some(rows::reactor::formula_from_sqlite(&mut f)?)
            };
            Ok((app, settings, token, Some((reactor, formula))))
        },
    )?;
    Some(found.and_then(|found| {
        found
            .map(|(app, settings, token, reactor)| {
                let reactor = match reactor {
                    Some((reactor, formula)) => Some((
                        reactor_to_domain(reactor)?,
                        formula.map(formula_to_domain).transpose()?,
                    )),
                    None => None,
                };
                Ok(with_reactor(
                    rows::application::to_domain(app)?,
                    settings,
                    reactor,
                    match token_id {
                        Some(_) => Beside::Read(token.map(rows::token::to_domain).transpose()?),
                        None => Beside::NotRead,
                    },
                ))
            })
            .transpose()
    }))
}
