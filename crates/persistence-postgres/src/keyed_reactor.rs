//! PostgreSQL's key-and-reactor read (`keyed_reactor.rs`): one statement joining five tables.

use std::sync::LazyLock;

use sea_orm::sea_query::Value;
use sea_orm::{DatabaseBackend, FromQueryResult, Statement};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::{Beside, KeyRead};
use uuid::Uuid;

use crate::direct::PgDirect;
use crate::keyed_read::{application_and_settings, application_and_settings_of, prefixed};
use tokenvault_persistence_shared::entity::{formula, reactor, token};
use tokenvault_persistence_shared::keyed_reactor::with_reactor;
use tokenvault_persistence_shared::repo_error::repo_err;
use tokenvault_persistence_shared::rows;
use tokenvault_persistence_shared::rows::reactor::{formula_to_domain, reactor_to_domain};
use tokenvault_persistence_shared::stamp::stamp;

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

/// The application holding `key_hash` (hex), its tenant's settings, that tenant's reactor
/// `reactor_id` with its formula and its live token `token_id`, in one PostgreSQL statement.
pub(crate) async fn key_and_reactor(
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
