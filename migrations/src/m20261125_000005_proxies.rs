//! Proxies (docs/decisions.md §8). A proxy goes with its tenant. Its key is stored twice: as the
//! hex SHA-256 in `key_hash`, unique across every tenant because invocation finds the proxy by
//! it alone, and as ciphertext under the tenant's data key in `key_ciphertext`, to show it
//! again. `configuration` is a JSON object of strings as text.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tenants {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Proxies {
    Table,
    TenantId,
    Id,
    Name,
    KeyHash,
    KeyCiphertext,
    DestinationUrl,
    RequireAuth,
    RequestTransform,
    ResponseTransform,
    ApplicationId,
    Configuration,
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
                    .table(Proxies::Table)
                    .col(ColumnDef::new(Proxies::TenantId).uuid().not_null())
                    .col(ColumnDef::new(Proxies::Id).uuid().not_null())
                    .col(ColumnDef::new(Proxies::Name).string_len(200).not_null())
                    .col(ColumnDef::new(Proxies::KeyHash).string_len(64).not_null())
                    .col(ColumnDef::new(Proxies::KeyCiphertext).blob().not_null())
                    .col(
                        ColumnDef::new(Proxies::DestinationUrl)
                            .string_len(400)
                            .not_null(),
                    )
                    .col(ColumnDef::new(Proxies::RequireAuth).boolean().not_null())
                    .col(ColumnDef::new(Proxies::RequestTransform).text().null())
                    .col(ColumnDef::new(Proxies::ResponseTransform).text().null())
                    .col(ColumnDef::new(Proxies::ApplicationId).uuid().null())
                    .col(ColumnDef::new(Proxies::Configuration).text().null())
                    .col(ColumnDef::new(Proxies::CreatedBy).uuid().null())
                    .col(
                        ColumnDef::new(Proxies::CreatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .col(ColumnDef::new(Proxies::ModifiedBy).uuid().null())
                    .col(
                        ColumnDef::new(Proxies::ModifiedAt)
                            .timestamp_with_time_zone()
                            .null(),
                    )
                    .primary_key(Index::create().col(Proxies::TenantId).col(Proxies::Id))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_proxies_tenant")
                            .from(Proxies::Table, Proxies::TenantId)
                            .to(Tenants::Table, Tenants::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_proxies_key_hash")
                    .table(Proxies::Table)
                    .col(Proxies::KeyHash)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_proxies_tenant_created")
                    .table(Proxies::Table)
                    .col(Proxies::TenantId)
                    .col(Proxies::CreatedAt)
                    .col(Proxies::Id)
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(Proxies::Table).to_owned())
            .await
    }
}
