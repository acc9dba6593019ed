//! Idempotent requests (docs/decisions.md §11). One row per (application, key): claimed with the
//! request's fingerprint and no `response` while the request runs, then completed with the
//! response encrypted under the tenant's data key. Rows go with their tenant; `created_at`
//! tells when a record expires and may be replaced.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tenants {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum IdempotencyKeys {
    Table,
    TenantId,
    ApplicationId,
    Key,
    Fingerprint,
    Response,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(IdempotencyKeys::Table)
                    .col(ColumnDef::new(IdempotencyKeys::TenantId).uuid().not_null())
                    .col(
                        ColumnDef::new(IdempotencyKeys::ApplicationId)
                            .uuid()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(IdempotencyKeys::Key)
                            .string_len(255)
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(IdempotencyKeys::Fingerprint)
                            .blob()
                            .not_null(),
                    )
                    .col(ColumnDef::new(IdempotencyKeys::Response).blob().null())
                    .col(
                        ColumnDef::new(IdempotencyKeys::CreatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .primary_key(
                        Index::create()
                            .col(IdempotencyKeys::ApplicationId)
                            .col(IdempotencyKeys::Key),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_idempotency_keys_tenant")
                            .from(IdempotencyKeys::Table, IdempotencyKeys::TenantId)
                            .to(Tenants::Table, Tenants::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_idempotency_keys_tenant")
                    .table(IdempotencyKeys::Table)
                    .col(IdempotencyKeys::TenantId)
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(IdempotencyKeys::Table).to_owned())
            .await
    }
}
