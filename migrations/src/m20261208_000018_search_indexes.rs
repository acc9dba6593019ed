//! Search indexes (docs/decisions.md §12): each token's search index expressions
//! (`tokens.search_indexes`, JSON text) and its blind index terms (`tokens.search_terms`, a
//! JSON array of keyed hashes: never a value), written with the row by every insert and
//! update path, so the terms are always those of the row's data and metadata.
//!
//! A search by `data` or `metadata` must answer from an index, however many tokens the tenant
//! holds:
//! - PostgreSQL: a GIN index (`jsonb_path_ops`) on `search_terms::jsonb`, which a search's
//!   `search_terms::jsonb @> '["<term>"]'` uses. No trigger and no second table: the terms are
//!   the row's own column, in its shard on a distributed database.
//! - SQLite has no index into a JSON array, so a table of its own, `token_search_terms`
//!   (tenant, term, token), is kept from the column by triggers in the statement that writes
//!   the row, and emptied with the token by its foreign key.
//!
//! Tokens stored before this migration have no terms: an update gives them their metadata's
//! (default indexes are given at create only).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tokens {
    Table,
    SearchIndexes,
    SearchTerms,
}

/// `fastupdate = off`: with it on, new entries wait in a pending list that every search reads
/// through until a vacuum merges it; after a million inserts with autovacuum behind, a lookup
/// took 5-7 ms instead of 0.1 (measured, docs/performance-journal.md). Off, each insert of a token
/// with terms updates the tree itself.
const PG_UP: &str = "CREATE INDEX IF NOT EXISTS idx_tokens_search_terms ON tokens \
    USING gin ((search_terms::jsonb) jsonb_path_ops) WITH (fastupdate = off) \
    WHERE search_terms IS NOT NULL";

const PG_DOWN: &str = "DROP INDEX IF EXISTS idx_tokens_search_terms";

const SQLITE_UP: &str = "
CREATE TABLE IF NOT EXISTS token_search_terms (
  tenant_id uuid_text NOT NULL,
  token_id varchar(400) NOT NULL,
  term varchar(64) NOT NULL,
  PRIMARY KEY (tenant_id, term, token_id),
  FOREIGN KEY (tenant_id, token_id) REFERENCES tokens (tenant_id, id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idx_token_search_terms_token ON token_search_terms (tenant_id, token_id);
CREATE TRIGGER IF NOT EXISTS tokens_search_terms_insert AFTER INSERT ON tokens
WHEN NEW.search_terms IS NOT NULL BEGIN
  INSERT OR IGNORE INTO token_search_terms (tenant_id, token_id, term)
  SELECT NEW.tenant_id, NEW.id, value FROM json_each(NEW.search_terms);
END;
CREATE TRIGGER IF NOT EXISTS tokens_search_terms_update AFTER UPDATE OF search_terms ON tokens
BEGIN
  DELETE FROM token_search_terms WHERE tenant_id = OLD.tenant_id AND token_id = OLD.id;
  INSERT OR IGNORE INTO token_search_terms (tenant_id, token_id, term)
  SELECT NEW.tenant_id, NEW.id, value FROM json_each(NEW.search_terms)
  WHERE NEW.search_terms IS NOT NULL;
END;
";

const SQLITE_DOWN: &str = "
DROP TRIGGER IF EXISTS tokens_search_terms_insert;
DROP TRIGGER IF EXISTS tokens_search_terms_update;
DROP TABLE IF EXISTS token_search_terms;
";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // Each step is skipped when done: SQLite runs migrations outside a transaction, and a
        // run stopped half-way must not block the next.
        for column in [Tokens::SearchIndexes, Tokens::SearchTerms] {
            if !manager.has_column("tokens", &column.to_string()).await? {
                manager
                    .alter_table(
                        Table::alter()
                            .table(Tokens::Table)
                            .add_column(ColumnDef::new(column).text().null())
                            .to_owned(),
                    )
                    .await?;
            }
        }
        let db = manager.get_connection();
        match db.get_database_backend() {
            DatabaseBackend::Postgres => db.execute_unprepared(PG_UP).await.map(|_| ()),
            _ => db.execute_unprepared(SQLITE_UP).await.map(|_| ()),
        }
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        match db.get_database_backend() {
            DatabaseBackend::Postgres => db.execute_unprepared(PG_DOWN).await?,
            _ => db.execute_unprepared(SQLITE_DOWN).await?,
        };
        for column in [Tokens::SearchIndexes, Tokens::SearchTerms] {
            if manager.has_column("tokens", &column.to_string()).await? {
                manager
                    .alter_table(
                        Table::alter()
                            .table(Tokens::Table)
                            .drop_column(column)
                            .to_owned(),
                    )
                    .await?;
            }
        }
        Ok(())
    }
}
