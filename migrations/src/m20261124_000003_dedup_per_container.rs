//! Deduplication matches only within one container (docs/decisions.md §6): the unique index
//! that makes concurrent identical creates safe covers `(tenant_id, container, dedup_key)`
//! instead of `(tenant_id, dedup_key)`. Existing rows satisfy the wider index, so the change
//! needs no data migration.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tokens {
    Table,
    TenantId,
    Container,
    DedupKey,
}

const OLD: &str = "idx_tokens_dedup";
const NEW: &str = "idx_tokens_dedup_container";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name(NEW)
                    .table(Tokens::Table)
                    .col(Tokens::TenantId)
                    .col(Tokens::Container)
                    .col(Tokens::DedupKey)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .drop_index(Index::drop().name(OLD).table(Tokens::Table).to_owned())
            .await
    }

    /// Going back fails when two containers hold the same deduplicated value, which the old
    /// index cannot express; such rows must be resolved by hand first.
    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name(OLD)
                    .table(Tokens::Table)
                    .col(Tokens::TenantId)
                    .col(Tokens::DedupKey)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .drop_index(Index::drop().name(NEW).table(Tokens::Table).to_owned())
            .await
    }
}
