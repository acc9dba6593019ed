//! The PostgreSQL schema can be distributed by `tenant_id` (Citus): every primary key and unique
//! index of a table with a `tenant_id` column holds it, and so does every foreign key between
//! such tables, except for the reference tables docs/persistence.md names on its line
//! `Reference tables: a, b` (small global lookups made before the tenant is known). A new
//! table or index that breaks this fails here.

#![allow(clippy::unwrap_used)]

use sea_orm::{ConnectionTrait, DatabaseBackend, Statement};
use tokenvault_persistence::testing::{Backend, TestDatabase, backends};

/// Keys and foreign keys of tenant-owned tables without `tenant_id`: (kind, table, name).
const BLOCKERS: &str = "
with owned as (
  select c.oid, c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
  where n.nspname = current_schema() and c.relkind in ('r','p')
    and exists (select 1 from pg_attribute a where a.attrelid = c.oid
                and a.attname = 'tenant_id' and not a.attisdropped)
)
select 'key', o.relname::text, i.relname::text from owned o
  join pg_index x on x.indrelid = o.oid join pg_class i on i.oid = x.indexrelid
 where (x.indisprimary or x.indisunique)
   and not exists (select 1 from pg_attribute a where a.attrelid = o.oid
                   and a.attname = 'tenant_id' and a.attnum = any(x.indkey))
union all
select 'fk', o.relname::text, k.conname::text from owned o
  join pg_constraint k on k.conrelid = o.oid and k.contype = 'f'
 where k.confrelid in (select oid from owned)
   and not exists (select 1 from pg_attribute a where a.attrelid = o.oid
                   and a.attname = 'tenant_id' and a.attnum = any(k.conkey))
order by 1, 2, 3";

/// The tables docs/persistence.md names as reference tables.
fn reference_tables() -> Vec<String> {
    let doc = include_str!("../../../docs/persistence.md");
    let line = doc
        .lines()
        .find_map(|l| l.strip_prefix("Reference tables: "))
        .expect("docs/persistence.md names the reference tables");
    line.split(',')
        .map(|t| t.trim().trim_matches(['`', '.']).to_string())
        .collect()
}

#[tokio::test]
async fn every_tenant_owned_key_holds_the_tenant() {
    if !backends().contains(&Backend::Postgres) {
        eprintln!("TOKENVAULT_TEST_DATABASE_URL is not set: the schema check needs PostgreSQL");
        return;
    }
    let db = TestDatabase::create(Backend::Postgres).await;
    let references = reference_tables();
    let rows = db
        .db
        .query_all_raw(Statement::from_string(DatabaseBackend::Postgres, BLOCKERS))
        .await
        .unwrap();
    let blockers: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| {
            (
                r.try_get_by_index(0).unwrap(),
                r.try_get_by_index(1).unwrap(),
                r.try_get_by_index(2).unwrap(),
            )
        })
        .filter(|(_, table, _)| !references.contains(table))
        .collect();
    let owned = db
        .db
        .query_one_raw(Statement::from_string(
            DatabaseBackend::Postgres,
            "select count(*) from information_schema.columns \
             where table_schema = current_schema() and column_name = 'tenant_id'",
        ))
        .await
        .unwrap()
        .unwrap()
        .try_get_by_index::<i64>(0)
        .unwrap();
    db.destroy().await;
    assert!(owned >= 10, "the schema has {owned} tenant-owned tables");
    assert!(
        blockers.is_empty(),
        "keys or foreign keys without tenant_id (name the table in docs/persistence.md's \
         reference tables only if it is a small global lookup): {blockers:?}"
    );
}

/// The reference tables exist, so that a renamed table cannot hide behind a stale name.
#[tokio::test]
async fn the_named_reference_tables_exist() {
    if !backends().contains(&Backend::Postgres) {
        return;
    }
    let db = TestDatabase::create(Backend::Postgres).await;
    for table in reference_tables() {
        let found = db
            .db
            .query_one_raw(Statement::from_sql_and_values(
                DatabaseBackend::Postgres,
                "select to_regclass($1) is not null",
                [table.clone().into()],
            ))
            .await
            .unwrap()
            .unwrap()
            .try_get_by_index::<bool>(0)
            .unwrap();
        assert!(found, "reference table {table} does not exist");
    }
    db.destroy().await;
}

/// The tables the Citus step makes reference tables are the ones the docs name.
#[test]
fn the_docs_name_the_reference_tables_the_citus_step_makes() {
    let named: Vec<String> = tokenvault_migrations::citus::REFERENCE_TABLES
        .iter()
        .map(|t| (*t).to_string())
        .collect();
    assert_eq!(reference_tables(), named);
}
