//! `tenants.deleted_at`: a deleted tenant is first a tombstone (its keys and data key gone at
//! once, in one short transaction), and its rows are removed afterwards in small batches by a
//! background job (docs/persistence.md, "Deleting a tenant"). One long cascade held the
//! tenant's row lock for seconds, and every shared queue (the token writer, the audit and
//! activity flushes) waited behind it for other tenants too.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tenants {
    Table,
    DeletedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Tenants::Table)
                    .add_column(
                        ColumnDef::new(Tenants::DeletedAt)
                            .timestamp_with_time_zone()
                            .null(),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Tenants::Table)
                    .drop_column(Tenants::DeletedAt)
                    .to_owned(),
            )
            .await
    }
}
