//! Tokens created per tenant and UTC month (`token_months`, migration 16) on SQLite, counted by
//! the two paths that insert tokens there: the writer's group commit (`sqlite/group_commit.rs`) and
//! `insert_all`. PostgreSQL counts them with a statement trigger, once per insert statement;
//! SQLite has only row triggers, and one `UPSERT` per token took ~8 % of the tokenize rate,
//! where one per (tenant, month) of a group is lost in the noise. The counts go in the
//! inserting transaction, so a count is never ahead of or behind its rows.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use sea_orm::{ConnectionTrait, DatabaseTransaction, DbErr, Statement};
use uuid::Uuid;

use tokenvault_persistence_shared::entity::token_month;
use tokenvault_persistence_shared::rows::columns;

/// The counter `UPSERT` (SQLite keeps one shard, 0), in the text both drivers bind; its
/// columns the entity's, in its order (tenant, month, shard, count).
static ADD: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO token_months ({}) VALUES (?1, ?2, 0, ?3) \
         ON CONFLICT (tenant_id, month, shard) DO UPDATE SET created = created + excluded.created",
        columns::<token_month::Column>(None, &[])
    )
});

/// Tokens inserted per (tenant, month), to be added in the inserting transaction.
#[derive(Debug, Default)]
pub(crate) struct Created(BTreeMap<(Uuid, String), i64>);

impl Created {
    /// One more token of `tenant_id` created in `month` (`month_of` its creation).
    pub(crate) fn add(&mut self, tenant_id: Uuid, month: &str) {
        *self.0.entry((tenant_id, month.to_owned())).or_insert(0) += 1;
    }

    /// Adds the counts on the writer's connection.
    pub(crate) fn write(&self, conn: &rusqlite::Connection) -> rusqlite::Result<()> {
        let mut add = conn.prepare_cached(&ADD)?;
        for ((tenant_id, month), n) in &self.0 {
            add.execute(rusqlite::params![&tenant_id.as_bytes()[..], month, n])?;
        }
        Ok(())
    }

    /// Adds the counts in a SeaORM transaction on a SQLite file.
    pub(crate) async fn write_seaorm(&self, txn: &DatabaseTransaction) -> Result<(), DbErr> {
        for ((tenant_id, month), n) in &self.0 {
            txn.execute_raw(Statement::from_sql_and_values(
                txn.get_database_backend(),
                ADD.as_str(),
                [(*tenant_id).into(), month.clone().into(), (*n).into()],
            ))
            .await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_takes_tenant_month_and_count_in_that_order() {
        assert!(
            ADD.contains("(tenant_id, month, shard, created) VALUES (?1, ?2, 0, ?3)"),
            "{}",
            ADD.as_str()
        );
    }

    #[test]
    fn counts_add_up_per_tenant_and_month() {
        let mut created = Created::default();
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        created.add(a, "2026-11");
        created.add(a, "2026-11");
        created.add(b, "2026-11");
        created.add(a, "2026-12");
        let counts: Vec<_> = created.0.into_iter().collect();
        assert_eq!(
            counts,
            [
                ((a, "2026-11".to_string()), 2),
                ((a, "2026-12".to_string()), 1),
                ((b, "2026-11".to_string()), 1),
            ]
        );
    }
}
