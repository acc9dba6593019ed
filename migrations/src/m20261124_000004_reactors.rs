//! Reactor formulas and reactors (docs/decisions.md §9). Both go with their tenant; a formula
//! cannot be deleted while a reactor of the same tenant uses it. Declarations and
//! configuration are JSON text.
//!
//! The reactor's reference to its formula is `ON DELETE NO ACTION`, not `RESTRICT`: both refuse
//! to delete a formula in use, but SQLite reports a `RESTRICT` refusal as a trigger constraint
//! (extended code 1811) rather than a foreign key violation (787), so only `NO ACTION` reaches
//! the adapter as one on both databases. `NO ACTION` is also checked at the end of the
//! statement, so deleting a tenant (which cascades to its formulas and its reactors in one
//! statement) never trips over it.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tenants {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum ReactorFormulas {
    Table,
    TenantId,
    Id,
    Name,
    Description,
    FormulaType,
    Code,
    Configuration,
    RequestParameters,
    CreatedBy,
    CreatedAt,
    ModifiedBy,
    ModifiedAt,
}

#[derive(DeriveIden)]
enum Reactors {
    Table,
    TenantId,
    Id,
    Name,
    FormulaId,
    Configuration,
    ApplicationId,
    CreatedBy,
    CreatedAt,
    ModifiedBy,
    ModifiedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ReactorFormulas::Table)
                    .col(ColumnDef::new(ReactorFormulas::TenantId).uuid().not_null())
                    .col(ColumnDef::new(ReactorFormulas::Id).uuid().not_null())
                    .col(
                        ColumnDef::new(ReactorFormulas::Name)
                            .string_len(200)
                            .not_null(),
                    )
                    .col(ColumnDef::new(ReactorFormulas::Description).text().null())
                    .col(
                        ColumnDef::new(ReactorFormulas::FormulaType)
                            .string_len(20)
                            .not_null(),
                    )
                    .col(ColumnDef::new(ReactorFormulas::Code).text().not_null())
                    .col(
                        ColumnDef::new(ReactorFormulas::Configuration)
                            .text()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(ReactorFormulas::RequestParameters)
                            .text()
                            .not_null(),
                    )
                    .col(ColumnDef::new(ReactorFormulas::CreatedBy).uuid().null())
                    .col(
                        ColumnDef::new(ReactorFormulas::CreatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .col(ColumnDef::new(ReactorFormulas::ModifiedBy).uuid().null())
                    .col(
                        ColumnDef::new(ReactorFormulas::ModifiedAt)
                            .timestamp_with_time_zone()
                            .null(),
                    )
                    .primary_key(
                        Index::create()
                            .col(ReactorFormulas::TenantId)
                            .col(ReactorFormulas::Id),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_reactor_formulas_tenant")
                            .from(ReactorFormulas::Table, ReactorFormulas::TenantId)
                            .to(Tenants::Table, Tenants::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_reactor_formulas_tenant_created")
                    .table(ReactorFormulas::Table)
                    .col(ReactorFormulas::TenantId)
                    .col(ReactorFormulas::CreatedAt)
                    .col(ReactorFormulas::Id)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(Reactors::Table)
                    .col(ColumnDef::new(Reactors::TenantId).uuid().not_null())
                    .col(ColumnDef::new(Reactors::Id).uuid().not_null())
                    .col(ColumnDef::new(Reactors::Name).string_len(200).not_null())
                    .col(ColumnDef::new(Reactors::FormulaId).uuid().not_null())
                    .col(ColumnDef::new(Reactors::Configuration).text().not_null())
                    .col(ColumnDef::new(Reactors::ApplicationId).uuid().null())
                    .col(ColumnDef::new(Reactors::CreatedBy).uuid().null())
                    .col(
                        ColumnDef::new(Reactors::CreatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .col(ColumnDef::new(Reactors::ModifiedBy).uuid().null())
                    .col(
                        ColumnDef::new(Reactors::ModifiedAt)
                            .timestamp_with_time_zone()
                            .null(),
                    )
                    .primary_key(Index::create().col(Reactors::TenantId).col(Reactors::Id))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_reactors_tenant")
                            .from(Reactors::Table, Reactors::TenantId)
                            .to(Tenants::Table, Tenants::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_reactors_formula")
                            .from_tbl(Reactors::Table)
                            .from_col(Reactors::TenantId)
                            .from_col(Reactors::FormulaId)
                            .to_tbl(ReactorFormulas::Table)
                            .to_col(ReactorFormulas::TenantId)
                            .to_col(ReactorFormulas::Id)
                            .on_delete(ForeignKeyAction::NoAction),
                    )
                    .to_owned(),
            )
            .await?;
        for (name, cols) in [
            (
                "idx_reactors_tenant_created",
                vec![Reactors::TenantId, Reactors::CreatedAt, Reactors::Id],
            ),
            (
                "idx_reactors_formula",
                vec![Reactors::TenantId, Reactors::FormulaId],
            ),
        ] {
            let mut index = Index::create();
            index.name(name).table(Reactors::Table);
            for col in cols {
                index.col(col);
            }
            manager.create_index(index.clone()).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            Reactors::Table.into_iden(),
            ReactorFormulas::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
