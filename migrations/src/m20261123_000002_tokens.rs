//! Tokens (ciphertext only), their associations, monthly activity, and each tenant's wrapped
//! data key. Everything goes with its tenant; associations go with either token.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tenants {
    Table,
    Id,
    DataKey,
}

#[derive(DeriveIden)]
enum Tokens {
    Table,
    TenantId,
    Id,
    TokenType,
    Container,
    Metadata,
    Data,
    Mask,
    Fingerprint,
    DedupKey,
    FingerprintExpression,
    CreatedBy,
    CreatedAt,
    ModifiedBy,
    ModifiedAt,
    ExpiresAt,
}

#[derive(DeriveIden)]
enum TokenAssociations {
    Table,
    TenantId,
    ParentId,
    ChildId,
}

#[derive(DeriveIden)]
enum TokenActivity {
    Table,
    TenantId,
    Month,
    TokenId,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Tenants::Table)
                    .add_column(ColumnDef::new(Tenants::DataKey).blob().null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(Tokens::Table)
                    .col(ColumnDef::new(Tokens::TenantId).uuid().not_null())
                    .col(ColumnDef::new(Tokens::Id).string_len(400).not_null())
                    .col(ColumnDef::new(Tokens::TokenType).string_len(32).not_null())
                    .col(ColumnDef::new(Tokens::Container).string_len(400).not_null())
                    .col(ColumnDef::new(Tokens::Metadata).text().not_null())
                    .col(ColumnDef::new(Tokens::Data).blob().not_null())
                    .col(ColumnDef::new(Tokens::Mask).blob().null())
                    .col(ColumnDef::new(Tokens::Fingerprint).string_len(64).null())
                    .col(ColumnDef::new(Tokens::DedupKey).string_len(64).null())
                    .col(ColumnDef::new(Tokens::FingerprintExpression).text().null())
                    .col(ColumnDef::new(Tokens::CreatedBy).uuid().null())
                    .col(
                        ColumnDef::new(Tokens::CreatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .col(ColumnDef::new(Tokens::ModifiedBy).uuid().null())
                    .col(
                        ColumnDef::new(Tokens::ModifiedAt)
                            .timestamp_with_time_zone()
                            .null(),
                    )
                    .col(
                        ColumnDef::new(Tokens::ExpiresAt)
                            .timestamp_with_time_zone()
                            .null(),
                    )
                    .primary_key(Index::create().col(Tokens::TenantId).col(Tokens::Id))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_tokens_tenant")
                            .from(Tokens::Table, Tokens::TenantId)
                            .to(Tenants::Table, Tenants::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        for (name, cols, unique) in [
            (
                "idx_tokens_tenant_created",
                vec![Tokens::TenantId, Tokens::CreatedAt, Tokens::Id],
                false,
            ),
            (
                "idx_tokens_dedup",
                vec![Tokens::TenantId, Tokens::DedupKey],
                true,
            ),
            (
                "idx_tokens_fingerprint",
                vec![Tokens::TenantId, Tokens::TokenType, Tokens::Fingerprint],
                false,
            ),
            ("idx_tokens_expires_at", vec![Tokens::ExpiresAt], false),
        ] {
            let mut index = Index::create();
            index.name(name).table(Tokens::Table);
            for col in cols {
                index.col(col);
            }
            if unique {
                index.unique();
            }
            manager.create_index(index.clone()).await?;
        }
        manager
            .create_table(
                Table::create()
                    .table(TokenAssociations::Table)
                    .col(
                        ColumnDef::new(TokenAssociations::TenantId)
                            .uuid()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(TokenAssociations::ParentId)
                            .string_len(400)
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(TokenAssociations::ChildId)
                            .string_len(400)
                            .not_null(),
                    )
                    .primary_key(
                        Index::create()
                            .col(TokenAssociations::TenantId)
                            .col(TokenAssociations::ParentId)
                            .col(TokenAssociations::ChildId),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_assoc_parent")
                            .from_tbl(TokenAssociations::Table)
                            .from_col(TokenAssociations::TenantId)
                            .from_col(TokenAssociations::ParentId)
                            .to_tbl(Tokens::Table)
                            .to_col(Tokens::TenantId)
                            .to_col(Tokens::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_assoc_child")
                            .from_tbl(TokenAssociations::Table)
                            .from_col(TokenAssociations::TenantId)
                            .from_col(TokenAssociations::ChildId)
                            .to_tbl(Tokens::Table)
                            .to_col(Tokens::TenantId)
                            .to_col(Tokens::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_assoc_child")
                    .table(TokenAssociations::Table)
                    .col(TokenAssociations::TenantId)
                    .col(TokenAssociations::ChildId)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(TokenActivity::Table)
                    .col(ColumnDef::new(TokenActivity::TenantId).uuid().not_null())
                    .col(
                        ColumnDef::new(TokenActivity::Month)
                            .string_len(7)
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(TokenActivity::TokenId)
                            .string_len(400)
                            .not_null(),
                    )
                    .primary_key(
                        Index::create()
                            .col(TokenActivity::TenantId)
                            .col(TokenActivity::Month)
                            .col(TokenActivity::TokenId),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_activity_tenant")
                            .from(TokenActivity::Table, TokenActivity::TenantId)
                            .to(Tenants::Table, Tenants::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            TokenActivity::Table.into_iden(),
            TokenAssociations::Table.into_iden(),
            Tokens::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(Tenants::Table)
                    .drop_column(Tenants::DataKey)
                    .to_owned(),
            )
            .await
    }
}
