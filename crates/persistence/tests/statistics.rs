//! Planner statistics on PostgreSQL: tables that changed much since their last analysis are
//! analyzed by the server (`analyze_changed_tables`), once; SQLite has nothing to do.

mod common;

use std::time::{Duration, Instant};

use tokenvault_domain::ports::TokenRepository;
use tokenvault_persistence::testing::{Backend, TestDatabase, backends};
use tokenvault_persistence::{
    SeaOrmTenantRepository, SeaOrmTokenRepository, analyze_changed_tables,
};

use common::{now, tenant, token};

#[tokio::test]
async fn changed_tables_are_analyzed_once() {
    for backend in backends() {
        let db = TestDatabase::create(backend).await;
        let tenant_id = tenant(&SeaOrmTenantRepository::new(db.db.clone())).await;
        let tokens = SeaOrmTokenRepository::new(db.db.clone());
        let batch: Vec<_> = (0..200)
            .map(|i| token(tenant_id, &format!("s-{i}"), "/", now()))
            .collect();
        tokens.insert_all(&batch).await.unwrap();
        if backend == Backend::Sqlite {
            assert!(analyze_changed_tables(&db.db).await.unwrap().is_empty());
            db.destroy().await;
            continue;
        }
        // PostgreSQL publishes a backend's row counts within about a second of its commit.
        let deadline = Instant::now() + Duration::from_secs(10);
        let analyzed = loop {
            let analyzed = analyze_changed_tables(&db.db).await.unwrap();
            if analyzed.iter().any(|t| t == "tokens") || Instant::now() > deadline {
                break analyzed;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert!(analyzed.iter().any(|t| t == "tokens"), "{analyzed:?}");
        // On Citus the rows are in the shards, each analyzed on its worker.
        let counted = if db.citus_workers().is_empty() {
            "SELECT reltuples::bigint FROM pg_class \
             WHERE relname = 'tokens' AND relnamespace = current_schema()::regnamespace"
        } else {
            "SELECT sum(greatest(result::bigint, 0))::bigint FROM run_command_on_shards('tokens', \
             $$SELECT reltuples::bigint FROM pg_class WHERE oid = '%s'::regclass$$)"
        };
        let rows: i64 = sea_orm::sqlx::query_scalar(counted)
            .fetch_one(db.db.get_postgres_connection_pool())
            .await
            .unwrap();
        assert!(rows >= 200, "tokens analyzed with {rows} rows");
        // Nothing changed since: nothing to analyze.
        let again = analyze_changed_tables(&db.db).await.unwrap();
        assert!(!again.iter().any(|t| t == "tokens"), "{again:?}");
        db.destroy().await;
    }
}
