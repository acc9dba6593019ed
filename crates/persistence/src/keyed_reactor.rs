//! An API key's application, its tenant's settings, one of the tenant's reactors with its
//! formula and the token the call's arguments name, in one round trip: the read path of
//! `POST /reactors/{id}/react`.
//!
//! On PostgreSQL one statement joins the five tables (the reactor and the token each by a
//! `LEFT JOIN` confined to the application's own tenant, the formula to the reactor's), so a
//! call pays one network round trip for what took four. Joining the token's own statement
//! raised a warm react's rate on PostgreSQL by about a fifth (+21 % by hand, +9 % and +19 % in
//! two bench pairs; docs/performance-journal.md, seventeenth session): a statement costs PostgreSQL
//! and the server mostly per statement. On SQLite the
//! same join runs on the calling thread (`direct.rs`): one read transaction instead of four,
//! whose begin and end (SQLite's locks on the log) were most of each point read's cost — 15 %
//! of the server's CPU under a react load went to the three reads before the token joined.
//! Only a private application's key, the only type that may hold `token:use` (decisions §4),
//! makes the server read a reactor or a token here, and nothing read is looked at before the
//! use case has checked the caller (`Reactors::react`, which authorizes the token as any
//! detokenization does).

use std::sync::LazyLock;

use rusqlite::params;
use sea_orm::sea_query::Value;
use sea_orm::{DatabaseBackend, FromQueryResult, Statement};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::application::Application;
use tokenvault_domain::formula::Formula;
use tokenvault_domain::ports::{Beside, KeyRead};
use tokenvault_domain::reactor::Reactor;
use tokenvault_domain::tenant::TenantSettings;
use tokenvault_domain::token::StoredToken;
use uuid::Uuid;

use crate::direct::{DirectReads, bound_time};
use crate::entity::{application, formula, reactor, token};
use crate::keyed_read::{application_and_settings, application_and_settings_of, prefixed};
use crate::pg_direct::PgDirect;
use crate::repo_error::repo_err;
use crate::rows::reactor::{formula_to_domain, reactor_to_domain};
use crate::rows::tenant::{settings_columns, settings_from_sqlite};
use crate::rows::{self, Fields, columns};
use crate::stamp::stamp;

/// The statement, with every column of the four entities under a prefix (`a_`, `t_`, `r_`,
/// `f_`). A NULL `$3` (no token asked for) joins no token.
static KEY_AND_REACTOR: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {}, {}, {}, {} \
         FROM applications a JOIN tenants s ON s.id = a.tenant_id \
         LEFT JOIN tokens t ON a.app_type = 'private' AND t.tenant_id = a.tenant_id \
         AND t.id = $3 AND (t.expires_at IS NULL OR t.expires_at > $4) \
         LEFT JOIN reactors r ON a.app_type = 'private' AND r.tenant_id = a.tenant_id \
         AND r.id = $2 \
         LEFT JOIN reactor_formulas f ON f.tenant_id = r.tenant_id AND f.id = r.formula_id \
         WHERE a.key_hash = $1 AND s.deleted_at IS NULL",
        application_and_settings(),
        prefixed::<token::Column>("t"),
        prefixed::<reactor::Column>("r"),
        prefixed::<formula::Column>("f"),
    )
});

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

/// What [`key_and_reactor_postgres`] reads, in one statement on a SQLite file's direct
/// connection; `None` when the file was locked (the caller then reads the key alone).
pub(crate) fn key_and_reactor_sqlite(
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

/// The application holding `key_hash` (hex), its tenant's settings, that tenant's reactor
/// `reactor_id` with its formula and its live token `token_id`, in one PostgreSQL statement.
pub(crate) async fn key_and_reactor_postgres(
    pg: &PgDirect,
    key_hash: String,
    reactor_id: Uuid,
    token_id: Option<&str>,
    now: OffsetDateTime,
) -> Result<Option<KeyRead>, RepoError> {
    let statement = Statement::from_sql_and_values(
        DatabaseBackend::Postgres,
        KEY_AND_REACTOR.as_str(),
        [
            Value::from(key_hash),
            Value::from(reactor_id),
            Value::from(token_id.map(str::to_owned)),
            Value::from(stamp(now)),
        ],
    );
    let Some(row) = pg.query_one(&statement).await.map_err(repo_err)? else {
        return Ok(None);
    };
    let (application, settings) = application_and_settings_of(&row)?;
    let token_found: Option<String> = row.try_get("t_", "id").map_err(repo_err)?;
    let token = if token_id.is_none() {
        Beside::NotRead
    } else if token_found.is_none() {
        Beside::Read(None)
    } else {
        Beside::Read(Some(rows::token::to_domain(
            token::Model::from_query_result(&row, "t_").map_err(repo_err)?,
        )?))
    };
    // Nothing joined: the primary key's columns are NULL.
    let reactor_found: Option<Uuid> = row.try_get("r_", "id").map_err(repo_err)?;
    let formula_found: Option<Uuid> = row.try_get("f_", "id").map_err(repo_err)?;
    let reactor = if reactor_found.is_some() {
        let reactor =
            reactor_to_domain(reactor::Model::from_query_result(&row, "r_").map_err(repo_err)?)?;
        let formula = if formula_found.is_some() {
            Some(formula_to_domain(
                formula::Model::from_query_result(&row, "f_").map_err(repo_err)?,
            )?)
        } else {
            None
        };
        Some((reactor, formula))
    } else {
        None
    };
    Ok(Some(with_reactor(application, settings, reactor, token)))
}

/// The key read with its reactor and, when one was asked for, the token.
fn with_reactor(
    application: Application,
    settings: TenantSettings,
    reactor: Option<(Reactor, Option<Formula>)>,
    token: Beside<Option<StoredToken>>,
) -> KeyRead {
    KeyRead {
        reactor: Beside::Read(reactor),
        token,
        ..KeyRead::alone(application, settings)
    }
}

#[cfg(test)]
mod tests {
    use super::KEY_AND_REACTOR;

    #[test]
    fn the_statement_names_every_column_once_under_its_prefix() {
        let sql = KEY_AND_REACTOR.as_str();
        for column in [
            "\"a_key_hash\"",
            "\"a_rules\"",
            "\"r_configuration\"",
            "\"r_formula_id\"",
            "\"f_code\"",
            "\"f_request_parameters\"",
            "\"t_data\"",
            "\"t_expires_at\"",
        ] {
            assert_eq!(sql.matches(column).count(), 1, "{column} in {sql}");
        }
        assert!(
            sql.contains("r.tenant_id = a.tenant_id"),
            "confined to the key's tenant"
        );
        assert!(
            sql.contains("a.app_type = 'private'"),
            "read for private keys only"
        );
        assert!(
            sql.contains("f.tenant_id = r.tenant_id"),
            "the formula of the reactor's tenant"
        );
        assert!(
            sql.contains("t.tenant_id = a.tenant_id AND t.id = $3"),
            "the token of the key's tenant"
        );
        assert!(
            sql.contains("t.expires_at IS NULL OR t.expires_at > $4"),
            "a live token only"
        );
    }
}
