//! Tenants and their applications (API credentials). Applications go with their tenant.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tenants {
    Table,
    Id,
    OwnerId,
    Name,
    FingerprintTokens,
    DeduplicateTokens,
    CreatedBy,
    CreatedAt,
    ModifiedBy,
    ModifiedAt,
}

#[derive(DeriveIden)]
enum Applications {
    Table,
    Id,
    TenantId,
    Name,
    AppType,
    Permissions,
    Rules,
    KeyHash,
    CreatedBy,
    CreatedAt,
    ModifiedBy,
    ModifiedAt,
    ExpiresAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Tenants::Table)
                    .col(ColumnDef::new(Tenants::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(Tenants::OwnerId).uuid().not_null())
                    .col(ColumnDef::new(Tenants::Name).string_len(200).not_null())
                    .col(
                        ColumnDef::new(Tenants::FingerprintTokens)
                            .boolean()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(Tenants::DeduplicateTokens)
                            .boolean()
                            .not_null(),
                    )
                    .col(ColumnDef::new(Tenants::CreatedBy).uuid().null())
                    .col(
                        ColumnDef::new(Tenants::CreatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .col(ColumnDef::new(Tenants::ModifiedBy).uuid().null())
                    .col(
                        ColumnDef::new(Tenants::ModifiedAt)
                            .timestamp_with_time_zone()
                            .null(),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(Applications::Table)
                    .col(
                        ColumnDef::new(Applications::Id)
                            .uuid()
                            .not_null()
                            .primary_key(),
                    )
                    .col(ColumnDef::new(Applications::TenantId).uuid().not_null())
                    .col(
                        ColumnDef::new(Applications::Name)
                            .string_len(200)
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(Applications::AppType)
                            .string_len(16)
                            .not_null(),
                    )
                    .col(ColumnDef::new(Applications::Permissions).text().not_null())
                    .col(ColumnDef::new(Applications::Rules).text().not_null())
                    .col(
                        ColumnDef::new(Applications::KeyHash)
                            .string_len(64)
                            .not_null()
                            .unique_key(),
                    )
                    .col(ColumnDef::new(Applications::CreatedBy).uuid().null())
                    .col(
                        ColumnDef::new(Applications::CreatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .col(ColumnDef::new(Applications::ModifiedBy).uuid().null())
                    .col(
                        ColumnDef::new(Applications::ModifiedAt)
                            .timestamp_with_time_zone()
                            .null(),
                    )
                    .col(
                        ColumnDef::new(Applications::ExpiresAt)
                            .timestamp_with_time_zone()
                            .null(),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_applications_tenant")
                            .from(Applications::Table, Applications::TenantId)
                            .to(Tenants::Table, Tenants::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_applications_tenant_created")
                    .table(Applications::Table)
                    .col(Applications::TenantId)
                    .col(Applications::CreatedAt)
                    .col(Applications::Id)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_applications_expires_at")
                    .table(Applications::Table)
                    .col(Applications::ExpiresAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(Applications::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(Tenants::Table).to_owned())
            .await
    }
}
