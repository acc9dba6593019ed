//! Sessions (docs/decisions.md §4, sessions). A public application starts a session and gets a
//! key and a single-use nonce; a private application of the same tenant authorizes the nonce.
//! Both are stored only as hex SHA-256, unique across every tenant: the key because requests
//! find the session by it alone, the nonce because authorization does. `nonce_hash` is null
//! once the nonce is used (NULLs never collide in a unique index). `permissions` and `rules`
//! are JSON text, as for applications. A session goes with its tenant and with either of its
//! applications: deleting the creator or the authorizer ends it.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tenants {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Applications {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Sessions {
    Table,
    Id,
    TenantId,
    CreatedBy,
    AuthorizedBy,
    KeyHash,
    NonceHash,
    Permissions,
    Rules,
    CreatedAt,
    ExpiresAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Sessions::Table)
                    .col(ColumnDef::new(Sessions::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(Sessions::TenantId).uuid().not_null())
                    .col(ColumnDef::new(Sessions::CreatedBy).uuid().not_null())
                    .col(ColumnDef::new(Sessions::AuthorizedBy).uuid().null())
                    .col(ColumnDef::new(Sessions::KeyHash).string_len(64).not_null())
                    .col(ColumnDef::new(Sessions::NonceHash).string_len(64).null())
                    .col(ColumnDef::new(Sessions::Permissions).text().not_null())
                    .col(ColumnDef::new(Sessions::Rules).text().not_null())
                    .col(
                        ColumnDef::new(Sessions::CreatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(Sessions::ExpiresAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_sessions_tenant")
                            .from(Sessions::Table, Sessions::TenantId)
                            .to(Tenants::Table, Tenants::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_sessions_created_by")
                            .from(Sessions::Table, Sessions::CreatedBy)
                            .to(Applications::Table, Applications::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_sessions_authorized_by")
                            .from(Sessions::Table, Sessions::AuthorizedBy)
                            .to(Applications::Table, Applications::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        for (name, column) in [
            ("idx_sessions_key_hash", Sessions::KeyHash),
            ("idx_sessions_nonce_hash", Sessions::NonceHash),
        ] {
            manager
                .create_index(
                    Index::create()
                        .name(name)
                        .table(Sessions::Table)
                        .col(column)
                        .unique()
                        .to_owned(),
                )
                .await?;
        }
        // Expiry sweeps, and the lookups of the cascading deletes.
        for (name, column) in [
            ("idx_sessions_expires_at", Sessions::ExpiresAt),
            ("idx_sessions_tenant", Sessions::TenantId),
            ("idx_sessions_created_by", Sessions::CreatedBy),
            ("idx_sessions_authorized_by", Sessions::AuthorizedBy),
        ] {
            manager
                .create_index(
                    Index::create()
                        .name(name)
                        .table(Sessions::Table)
                        .col(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(Sessions::Table).to_owned())
            .await
    }
}
