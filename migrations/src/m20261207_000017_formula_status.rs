//! `reactor_formulas.status`: whether the formula's code compiles (`verified` or `failed`,
//! docs/decisions.md §12), checked in the code sandbox at create and update. Formulas stored
//! before this migration keep a NULL status (not checked yet): their next update checks them.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ReactorFormulas {
    Table,
    Status,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ReactorFormulas::Table)
                    .add_column(ColumnDef::new(ReactorFormulas::Status).text().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ReactorFormulas::Table)
                    .drop_column(ReactorFormulas::Status)
                    .to_owned(),
            )
            .await
    }
}
