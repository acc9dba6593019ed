//! The audit log (docs/decisions.md §11). `audit_log` holds each tenant's chain of entries,
//! numbered 1, 2, 3, … by `seq` (unique per tenant) and each carrying the MAC `hash` over the
//! previous one; `audit_heads` holds each tenant's last (`seq`, `hash`), the row appenders
//! compare and swap. `actor_id` has no foreign key: an actor may be deleted, its trail stays.
//! Both go with their tenant. Lists are by tenant and time, optionally for one entity.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tenants {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum AuditLog {
    Table,
    Id,
    TenantId,
    Seq,
    ActorType,
    ActorId,
    Operation,
    EntityType,
    EntityId,
    TraceId,
    CreatedAt,
    Hash,
}

#[derive(DeriveIden)]
enum AuditHeads {
    Table,
    TenantId,
    Seq,
    Hash,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(AuditLog::Table)
                    .col(ColumnDef::new(AuditLog::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(AuditLog::TenantId).uuid().not_null())
                    .col(ColumnDef::new(AuditLog::Seq).big_integer().not_null())
                    .col(
                        ColumnDef::new(AuditLog::ActorType)
                            .string_len(20)
                            .not_null(),
                    )
                    .col(ColumnDef::new(AuditLog::ActorId).uuid().null())
                    .col(
                        ColumnDef::new(AuditLog::Operation)
                            .string_len(20)
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(AuditLog::EntityType)
                            .string_len(20)
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(AuditLog::EntityId)
                            .string_len(400)
                            .not_null(),
                    )
                    .col(ColumnDef::new(AuditLog::TraceId).string_len(200).null())
                    .col(
                        ColumnDef::new(AuditLog::CreatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .col(ColumnDef::new(AuditLog::Hash).string_len(100).not_null())
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_audit_log_tenant")
                            .from(AuditLog::Table, AuditLog::TenantId)
                            .to(Tenants::Table, Tenants::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        // One entry per place in the chain: a second appender at the same `seq` fails here
        // even if it got past the head. Also the lookup of the tenant's cascading delete.
        manager
            .create_index(
                Index::create()
                    .name("idx_audit_log_tenant_seq")
                    .table(AuditLog::Table)
                    .col(AuditLog::TenantId)
                    .col(AuditLog::Seq)
                    .unique()
                    .to_owned(),
            )
            .await?;
        // Lists: by time, and by time for one entity.
        manager
            .create_index(
                Index::create()
                    .name("idx_audit_log_tenant_created_at")
                    .table(AuditLog::Table)
                    .col(AuditLog::TenantId)
                    .col(AuditLog::CreatedAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_audit_log_tenant_entity_created_at")
                    .table(AuditLog::Table)
                    .col(AuditLog::TenantId)
                    .col(AuditLog::EntityId)
                    .col(AuditLog::CreatedAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(AuditHeads::Table)
                    .col(
                        ColumnDef::new(AuditHeads::TenantId)
                            .uuid()
                            .not_null()
                            .primary_key(),
                    )
                    .col(ColumnDef::new(AuditHeads::Seq).big_integer().not_null())
                    .col(ColumnDef::new(AuditHeads::Hash).string_len(100).not_null())
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_audit_heads_tenant")
                            .from(AuditHeads::Table, AuditHeads::TenantId)
                            .to(Tenants::Table, Tenants::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(AuditHeads::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(AuditLog::Table).to_owned())
            .await
    }
}
