//! Three changes of the token rows (docs/decisions.md §6):
//!
//! - `version`: a counter every update moves on, and checks in its `WHERE`, so that of two
//!   concurrent PATCHes of a token the later one sees that it read a stale row instead of
//!   writing over the earlier one (optimistic concurrency; the same statement on both
//!   databases).
//! - `deduplicate`: the token's own `deduplicate_token` choice, `NULL` when the create did not
//!   make one; an update keeps it instead of taking the tenant's setting.
//! - The fingerprint of a token with its own expression now also says that it is not the
//!   type's default (`sealing.rs`), so the dedup keys stored for such tokens before no longer
//!   match any new one, and one spelled like the default could block a default token's insert
//!   in its container. They are dropped (the token keeps deduplicating: `deduplicate` is set),
//!   and the next update of such a token computes its fingerprint and key again.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tokens {
    Table,
    Version,
    Deduplicate,
}

const FORGET_OLD_KEYS: &str = "UPDATE tokens SET deduplicate = TRUE, dedup_key = NULL \
     WHERE fingerprint_expression IS NOT NULL AND dedup_key IS NOT NULL";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Tokens::Table)
                    .add_column(
                        ColumnDef::new(Tokens::Version)
                            .big_integer()
                            .not_null()
                            .default(0),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Tokens::Table)
                    .add_column(ColumnDef::new(Tokens::Deduplicate).boolean().null())
                    .to_owned(),
            )
            .await?;
        manager
            .get_connection()
            .execute_unprepared(FORGET_OLD_KEYS)
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [Tokens::Deduplicate, Tokens::Version] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Tokens::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
