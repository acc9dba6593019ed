//! Three of the token indexes hold only the tokens that have the indexed value: most tokens have
//! no fingerprint, no dedup key and no expiry, and every index entry written for them was a
//! B-tree insert per token that no query could use (`fingerprint = ?`, the dedup key's
//! uniqueness, `expires_at <= ?` never match `NULL`). Each index is rebuilt with
//! `WHERE <column> IS NOT NULL`, under the same name: the dedup violation is still told apart
//! by it. Both databases accept the same statements, and both use a partial index for a
//! comparison on its column, which implies the column is not null.
//!
//! The fingerprint index also gains the container and `created_at`: the lookup of a
//! deduplicated create (`find_by_fingerprint`: tenant, container, type, fingerprint, oldest
//! first) is then answered by the index in order. Before, both databases walked the tenant's
//! `(tenant_id, created_at, id)` index until a row matched, every token of the tenant when none
//! did: a scan on every create of a new value in a deduplicating tenant.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// (name, `UNIQUE` or not, columns, columns before this migration, the column that must be set).
const INDEXES: [(&str, bool, &str, &str, &str); 3] = [
    (
        "idx_tokens_fingerprint",
        false,
        "tenant_id, container, token_type, fingerprint, created_at",
        "tenant_id, token_type, fingerprint",
        "fingerprint",
    ),
    (
        "idx_tokens_dedup_container",
        true,
        "tenant_id, container, dedup_key",
        "tenant_id, container, dedup_key",
        "dedup_key",
    ),
    (
        "idx_tokens_expires_at",
        false,
        "expires_at",
        "expires_at",
        "expires_at",
    ),
];

/// Drops and creates index `name` in one string, so both run on one pooled connection: SQLite
/// checks a `CREATE INDEX` against the schema the connection last read, and one that did not
/// see another connection's `DROP INDEX` reports the index as existing. `IF EXISTS`: SQLite runs
/// migrations outside a transaction, and a run stopped between the two statements must not
/// block the next.
fn replace(name: &str, unique: bool, columns: &str, partial_on: Option<&str>) -> String {
    let unique = if unique { "UNIQUE " } else { "" };
    let partial = partial_on.map_or(String::new(), |c| format!(" WHERE {c} IS NOT NULL"));
    format!(
        "DROP INDEX IF EXISTS {name}; CREATE {unique}INDEX {name} ON tokens ({columns}){partial}"
    )
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for (name, unique, columns, _, set) in INDEXES {
            db.execute_unprepared(&replace(name, unique, columns, Some(set)))
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for (name, unique, _, columns, _) in INDEXES {
            db.execute_unprepared(&replace(name, unique, columns, None))
                .await?;
        }
        Ok(())
    }
}
