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
use sea_orm::{DatabaseBackend, FromQueryResult, Iden, Iterable, Statement};
use time::OffsetDateTime;
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::KeyedToken;
use tokenvault_domain::tenant::TenantSettings;

use crate::entity::{application, token};
use crate::pg_direct::PgDirect;
use crate::repo_err;
use crate::stamp::stamp;

/// The statement, with every column of both entities under a prefix (`a_`, `t_`) that SeaORM's
/// `FromQueryResult` reads back.
static KEY_AND_TOKEN: LazyLock<String> = LazyLock::new(|| {
    let app: Vec<String> = application::Column::iter()
        .map(|c| {
            let c = c.to_string();
            format!("a.\"{c}\" AS \"a_{c}\"")
        })
        .collect();
    let tok: Vec<String> = token::Column::iter()
        .map(|c| {
            let c = c.to_string();
            format!("t.\"{c}\" AS \"t_{c}\"")
        })
        .collect();
    format!(
        "SELECT {}, s.fingerprint_tokens AS s_fingerprint_tokens, \
         s.deduplicate_tokens AS s_deduplicate_tokens, {} \
         FROM applications a JOIN tenants s ON s.id = a.tenant_id \
         LEFT JOIN tokens t ON a.app_type = 'private' AND t.tenant_id = a.tenant_id AND t.id = $2 \
         AND (t.expires_at IS NULL OR t.expires_at > $3) \
         WHERE a.key_hash = $1",
        app.join(", "),
        tok.join(", ")
    )
});

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
    let app = application::Model::from_query_result(&row, "a_").map_err(repo_err)?;
    let settings = TenantSettings {
        fingerprint_tokens: row.try_get("s_", "fingerprint_tokens").map_err(repo_err)?,
        deduplicate_tokens: row.try_get("s_", "deduplicate_tokens").map_err(repo_err)?,
    };
    let token_id: Option<String> = row.try_get("t_", "id").map_err(repo_err)?;
    let token = match token_id {
        Some(_) => Some(crate::tokens::to_domain(
            token::Model::from_query_result(&row, "t_").map_err(repo_err)?,
        )?),
        None => None,
    };
    Ok(Some(KeyedToken {
        application: crate::applications::to_domain(app)?,
        settings,
        token,
    }))
}

#[cfg(test)]
mod tests {
    use super::KEY_AND_TOKEN;

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
