//! PostgreSQL's key read (every request's authentication, one statement of its own) and the
//! columns every keyed read selects (the key's application under `a_`, its tenant's settings
//! under `s_`, another entity under its own prefix) with their decoding, shared by the
//! key-and-token reads answered together (`postgres/key_group.rs`, `GET /tokens/{id}`) and the
//! key-and-reactor read (`keyed_reactor.rs`). A token is joined only for a private
//! application's key, the only type that may hold `token:read` (decisions §4): a public or
//! management key never makes the server read a token's ciphertext. SQLite's keyed reads run
//! on the calling thread (`sqlite/direct.rs`).

use std::sync::LazyLock;

use sea_orm::sea_query::Value;
use sea_orm::{DatabaseBackend, FromQueryResult, Iden, Iterable, QueryResult, Statement};
use tokenvault_domain::RepoError;
use tokenvault_domain::application::Application;
use tokenvault_domain::tenant::TenantSettings;

use crate::direct::PgDirect;
use tokenvault_persistence_shared::entity::application;
use tokenvault_persistence_shared::repo_error::repo_err;
use tokenvault_persistence_shared::rows::tenant::{settings_columns, settings_of};

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
        "{}, {}",
        prefixed::<application::Column>("a"),
        settings_columns("s", Some("s_"))
    )
}

/// The key's application and its tenant's settings, as [`application_and_settings`] selected
/// them.
pub(crate) fn application_and_settings_of(
    row: &QueryResult,
) -> Result<(Application, TenantSettings), RepoError> {
    let app = application::Model::from_query_result(row, "a_").map_err(repo_err)?;
    let settings = settings_of(row, "s_").map_err(repo_err)?;
    Ok((
        tokenvault_persistence_shared::rows::application::to_domain(app)?,
        settings,
    ))
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

#[cfg(test)]
mod tests {
    use super::KEY;

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
}
