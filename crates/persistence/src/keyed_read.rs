//! An API key's application, its tenant's settings and one of the tenant's tokens in one round
//! trip: the read path of `GET /tokens/{id}`.
//!
//! On PostgreSQL one statement joins the three tables (the token by a `LEFT JOIN` confined to
//! the application's own tenant), so a request pays one network round trip instead of two. On
//! SQLite the two point reads run on the calling thread (`direct.rs`), which costs less than
//! any statement through the driver's worker. The token is read only for a private
//! application's key, the only type that may hold `token:read` (decisions §4): a public or
//! management key never makes the server read a token's ciphertext.

use std::sync::LazyLock;

use sea_orm::sea_query::Value;
use sea_orm::{DatabaseBackend, FromQueryResult, Iden, Iterable, QueryResult, Statement};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::application::Application;
use tokenvault_domain::ports::KeyedToken;
use tokenvault_domain::tenant::TenantSettings;

use crate::entity::{application, token};
use crate::pg_direct::PgDirect;
use crate::repo_err;
use crate::stamp::stamp;

/// The statement, with every column of both entities under a prefix (`a_`, `t_`) that SeaORM's
/// `FromQueryResult` reads back.
static KEY_AND_TOKEN: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {}, {} \
         FROM applications a JOIN tenants s ON s.id = a.tenant_id \
         LEFT JOIN tokens t ON a.app_type = 'private' AND t.tenant_id = a.tenant_id AND t.id = $2 \
         AND (t.expires_at IS NULL OR t.expires_at > $3) \
         WHERE a.key_hash = $1 AND s.deleted_at IS NULL",
        application_and_settings(),
        prefixed::<token::Column>("t"),
    )
});

/// The key's application and its tenant's settings alone: every request's authentication on
/// PostgreSQL. Fixed text (SeaORM's builder made this statement anew per request, and its
/// `find_also_related` selected every column of the tenant, its wrapped data key included).
static KEY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {} FROM applications a JOIN tenants s ON s.id = a.tenant_id \
         WHERE a.key_hash = $1 AND s.deleted_at IS NULL",
        application_and_settings(),
    )
});

/// The key's application's columns and its tenant's settings, as the keyed reads select them:
/// the application under `a_`, the settings under `s_`.
pub(crate) fn application_and_settings() -> String {
    format!(
        "{}, s.fingerprint_tokens AS s_fingerprint_tokens, \
         s.deduplicate_tokens AS s_deduplicate_tokens",
        prefixed::<application::Column>("a")
    )
}

/// The key's application and its tenant's settings, as [`application_and_settings`] selected
/// them.
pub(crate) fn application_and_settings_of(
    row: &QueryResult,
) -> Result<(Application, TenantSettings), RepoError> {
    let app = application::Model::from_query_result(row, "a_").map_err(repo_err)?;
    let settings = TenantSettings {
        fingerprint_tokens: row.try_get("s_", "fingerprint_tokens").map_err(repo_err)?,
        deduplicate_tokens: row.try_get("s_", "deduplicate_tokens").map_err(repo_err)?,
    };
    Ok((crate::rows::application::to_domain(app)?, settings))
}

/// Every column of an entity as `alias."c" AS "alias_c"`, which SeaORM's `FromQueryResult`
/// reads back under the prefix `alias_`.
pub(crate) fn prefixed<C: Iterable + Iden>(alias: &str) -> String {
    C::iter()
        .map(|c| {
            let c = c.to_string();
            format!("{alias}.\"{c}\" AS \"{alias}_{c}\"")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The application holding `key_hash` (hex) and its tenant's settings, in one PostgreSQL
/// statement; `None` for an unknown key or a deleted tenant's.
pub(crate) async fn key_postgres(
    pg: &PgDirect,
    key_hash: String,
) -> Result<Option<(Application, TenantSettings)>, RepoError> {
    let statement = Statement::from_sql_and_values(
        DatabaseBackend::Postgres,
        KEY.as_str(),
        [Value::from(key_hash)],
    );
    let Some(row) = pg.query_one(&statement).await.map_err(repo_err)? else {
        return Ok(None);
    };
    application_and_settings_of(&row).map(Some)
}

/// The application holding `key_hash` (hex), its tenant's settings and that tenant's live token
/// `token_id`, in one PostgreSQL statement.
pub(crate) async fn key_and_token_postgres(
    pg: &PgDirect,
    key_hash: String,
    token_id: &str,
    now: OffsetDateTime,
) -> Result<Option<KeyedToken>, RepoError> {
    let statement = Statement::from_sql_and_values(
        DatabaseBackend::Postgres,
        KEY_AND_TOKEN.as_str(),
        [
            Value::from(key_hash),
            Value::from(token_id.to_owned()),
            Value::from(stamp(now)),
        ],
    );
    let Some(row) = pg.query_one(&statement).await.map_err(repo_err)? else {
        return Ok(None);
    };
    let (application, settings) = application_and_settings_of(&row)?;
    let token_id: Option<String> = row.try_get("t_", "id").map_err(repo_err)?;
    let token = match token_id {
        Some(_) => Some(crate::rows::token::to_domain(
            token::Model::from_query_result(&row, "t_").map_err(repo_err)?,
        )?),
        None => None,
    };
    Ok(Some(KeyedToken {
        application,
        settings,
        token,
    }))
}

#[cfg(test)]
mod tests {
    use super::{KEY, KEY_AND_TOKEN};

    #[test]
    fn the_key_read_selects_the_application_and_settings_only() {
        let sql = KEY.as_str();
        assert_eq!(sql.matches("\"a_key_hash\"").count(), 1, "{sql}");
        assert!(sql.contains("s_deduplicate_tokens"), "{sql}");
        assert!(
            !sql.contains("data_key"),
            "never the tenant's wrapped key: {sql}"
        );
        assert!(
            sql.contains("s.deleted_at IS NULL"),
            "a deleted tenant's keys stop"
        );
    }

    #[test]
    fn the_statement_names_every_column_once_under_its_prefix() {
        let sql = KEY_AND_TOKEN.as_str();
        for column in [
            "\"a_key_hash\"",
            "\"a_rules\"",
            "\"t_data\"",
            "\"t_expires_at\"",
        ] {
            assert_eq!(sql.matches(column).count(), 1, "{column} in {sql}");
        }
        assert!(
            sql.contains("t.tenant_id = a.tenant_id"),
            "confined to the key's tenant"
        );
        assert!(
            sql.contains("a.app_type = 'private'"),
            "read for private keys only"
        );
    }
}
