//! Distribution on Citus (docs/decisions.md §13), run by `cargo xtask citus` against a Citus
//! coordinator (`TOKENVAULT_TEST_DATABASE_URL` set to it): migrating makes the reference tables
//! reference tables and every other tenant-owned table a distributed table of one co-location
//! group with shards on every worker; again, nothing changes; a single-node database with rows
//! that gains Citus is distributed with every row and count kept; a cluster the schema cannot
//! be spread over is refused before anything changes. On plain PostgreSQL or SQLite these
//! tests say so and check nothing.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::collections::BTreeSet;

use sea_orm::sqlx::{Connection, Executor, PgConnection};
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::{TokenRepository, TokenWrite};
use tokenvault_migrations::citus::{Distribution, REFERENCE_TABLES, distribute};
use tokenvault_persistence::testing::{Backend, TestDatabase, backends};
use tokenvault_persistence::{SeaOrmTenantRepository, SeaOrmTokenRepository};

mod common;

use common::{now, tenant, token};

/// Whether the test PostgreSQL is a Citus coordinator (its workers), else why not.
async fn on_citus() -> Option<TestDatabase> {
    if !backends().contains(&Backend::Postgres) {
        eprintln!("TOKENVAULT_TEST_DATABASE_URL is not set: the Citus tests need a coordinator");
        return None;
    }
    let db = TestDatabase::create_undistributed().await;
    if db.citus_workers().is_empty() {
        eprintln!("the test PostgreSQL has no Citus: run these with `cargo xtask citus`");
        db.destroy().await;
        return None;
    }
    Some(db)
}

async fn texts(db: &DatabaseConnection, sql: &str) -> Vec<String> {
    db.query_all_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .unwrap()
        .iter()
        .map(|r| r.try_get_by_index(0).unwrap())
        .collect()
}

async fn number(db: &DatabaseConnection, sql: &str) -> i64 {
    db.query_one_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .unwrap()
        .unwrap()
        .try_get_by_index(0)
        .unwrap()
}

/// Checks the distributed layout: reference tables, one co-location group by `tenant_id` for
/// every other tenant-owned table, shards of it on every worker.
async fn assert_distributed(db: &TestDatabase) {
    let conn: &DatabaseConnection = &db.db;
    let references: BTreeSet<String> = texts(
        conn,
        "SELECT table_name::text FROM citus_tables WHERE citus_table_type = 'reference'",
    )
    .await
    .into_iter()
    .collect();
    let expected: BTreeSet<String> = REFERENCE_TABLES.iter().map(|t| (*t).to_string()).collect();
    assert_eq!(references, expected, "the reference tables");
    let owned: BTreeSet<String> = texts(
        conn,
        "SELECT table_name::text FROM information_schema.columns \
         WHERE table_schema = current_schema() AND column_name = 'tenant_id'",
    )
    .await
    .into_iter()
    .filter(|t| !expected.contains(t))
    .collect();
    assert!(owned.contains("tokens") && owned.len() >= 10, "{owned:?}");
    let distributed: BTreeSet<String> = texts(
        conn,
        "SELECT table_name::text FROM citus_tables \
         WHERE citus_table_type = 'distributed' AND distribution_column = 'tenant_id'",
    )
    .await
    .into_iter()
    .collect();
    assert_eq!(
        distributed, owned,
        "every other tenant-owned table, by tenant_id"
    );
    let groups = number(
        conn,
        "SELECT COUNT(DISTINCT colocation_id) FROM citus_tables WHERE citus_table_type = 'distributed'",
    )
    .await;
    assert_eq!(groups, 1, "one co-location group");
    let nodes = number(
        conn,
        "SELECT COUNT(DISTINCT s.nodeport) FROM citus_shards s \
         JOIN pg_dist_node n ON n.nodename = s.nodename AND n.nodeport = s.nodeport \
         WHERE s.citus_table_type = 'distributed' AND n.groupid <> 0",
    )
    .await;
    assert_eq!(
        usize::try_from(nodes).unwrap(),
        db.citus_workers().len(),
        "shards on every worker"
    );
}

#[tokio::test]
async fn migrating_distributes_by_tenant_and_again_changes_nothing() {
    let Some(db) = on_citus().await else { return };
    db.add_citus().await;
    tokenvault_persistence::migrate(&db.db).await.unwrap();
    assert_distributed(&db).await;
    assert_eq!(distribute(&db.db).await.unwrap(), Distribution::Unchanged);
    // The statement triggers Citus cannot run on shards are gone, the row trigger is there.
    let triggers = texts(
        &db.db,
        "SELECT tgname::text FROM pg_trigger WHERE tgrelid = 'tokens'::regclass \
         AND NOT tgisinternal ORDER BY 1",
    )
    .await;
    assert_eq!(
        triggers,
        [
            "tokens_row_deleted",
            "tokens_row_inserted",
            "tokens_row_moved"
        ]
    );
    db.destroy().await;
}

#[tokio::test]
async fn a_single_node_database_with_rows_is_distributed_keeping_them() {
    let Some(db) = on_citus().await else { return };
    let tenants = SeaOrmTenantRepository::new(db.db.clone());
    let tokens = SeaOrmTokenRepository::new(db.db.clone());
    let (a, b) = (tenant(&tenants).await, tenant(&tenants).await);
    for i in 0..40 {
        let owner = if i % 4 == 0 { b } else { a };
        let written = tokens
            .insert(&token(owner, &format!("tok-{i}"), "/c/", now()))
            .await;
        assert_eq!(written.unwrap(), TokenWrite::Done);
    }
    let before = number(&db.db, "SELECT COUNT(*) FROM tokens").await;
    let counted = "SELECT COALESCE(SUM(live), 0)::bigint FROM token_counts";
    assert_eq!((before, number(&db.db, counted).await), (40, 40));

    db.add_citus().await;
    let Distribution::Converted(tables) = distribute(&db.db).await.unwrap() else {
        panic!("a database that gained Citus is distributed");
    };
    assert!(tables.iter().any(|t| t == "tokens"), "{tables:?}");
    assert_distributed(&db).await;
    assert_eq!(number(&db.db, "SELECT COUNT(*) FROM tokens").await, 40);
    let tenant_a = format!("SELECT COUNT(*) FROM tokens WHERE tenant_id = '{a}'");
    assert_eq!(number(&db.db, &tenant_a).await, 30);
    // The row trigger goes on counting where the statement triggers left off: a token in,
    // one of them moved to another container, one deleted (each statement names its tenant).
    db.execute(&format!(
        "INSERT INTO tokens (tenant_id, id, token_type, container, metadata, data, created_at, \
         search_terms) SELECT tenant_id, 'after', token_type, container, metadata, data, \
         created_at, search_terms FROM tokens WHERE tenant_id = '{a}' AND id = 'tok-1'"
    ))
    .await;
    db.execute(&format!(
        "UPDATE tokens SET container = '/d/' WHERE tenant_id = '{a}' AND id = 'tok-2'"
    ))
    .await;
    db.execute(&format!(
        "DELETE FROM tokens WHERE tenant_id = '{b}' AND id = 'tok-0'"
    ))
    .await;
    assert_eq!(number(&db.db, counted).await, 40);
    let moved = format!(
        "SELECT COALESCE(SUM(live), 0)::bigint FROM token_counts \
         WHERE tenant_id = '{a}' AND container = '/d/'"
    );
    assert_eq!(number(&db.db, &moved).await, 1);
    let months = "SELECT COALESCE(SUM(created), 0)::bigint FROM token_months";
    assert_eq!(
        number(&db.db, months).await,
        41,
        "every token created, counted once"
    );
    assert_eq!(distribute(&db.db).await.unwrap(), Distribution::Unchanged);
    db.destroy().await;
}

#[tokio::test]
async fn a_cluster_without_workers_is_refused_before_anything_changes() {
    let Some(db) = on_citus().await else { return };
    db.execute("CREATE EXTENSION citus").await;
    let err = tokenvault_persistence::migrate(&db.db).await.unwrap_err();
    assert!(err.to_string().contains("no active worker node"), "{err}");
    let converted = number(&db.db, "SELECT COUNT(*) FROM pg_dist_partition").await;
    assert_eq!(converted, 0, "nothing distributed");
    db.destroy().await;
}

#[tokio::test]
async fn a_worker_without_the_extension_is_refused_by_name() {
    let Some(db) = on_citus().await else { return };
    db.add_citus().await;
    // The extension dropped on one worker after it was added (as after a worker's database
    // was restored without it).
    let worker = &db.citus_workers()[0];
    let (host, port) = worker_address(worker);
    let name = db
        .url
        .rsplit('/')
        .next()
        .unwrap()
        .split('?')
        .next()
        .unwrap();
    let worker_db = format!("{}/{name}", worker.rsplit_once('/').unwrap().0);
    let mut conn = PgConnection::connect(&worker_db).await.unwrap();
    conn.execute("DROP EXTENSION citus CASCADE").await.unwrap();
    let _ = conn.close().await;
    let err = tokenvault_persistence::migrate(&db.db).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("missing") && text.contains(&format!("{host}:{port}")),
        "{text}"
    );
    let converted = number(&db.db, "SELECT COUNT(*) FROM pg_dist_partition").await;
    assert_eq!(converted, 0, "nothing distributed");
    db.destroy().await;
}

/// The host and port of a worker's admin URL.
fn worker_address(url: &str) -> (String, u16) {
    let authority = url.split("://").nth(1).unwrap().split('/').next().unwrap();
    let host_port = authority.rsplit('@').next().unwrap();
    let (host, port) = host_port.rsplit_once(':').unwrap();
    (host.to_string(), port.parse().unwrap())
}

/// The worker holding `tenant`'s shard of `tokens` (its port).
async fn node_of(db: &DatabaseConnection, tenant: uuid::Uuid) -> i64 {
    number(
        db,
        &format!(
            "SELECT nodeport::bigint FROM citus_shards WHERE table_name = 'tokens'::regclass \
             AND shardid = get_shard_id_for_distribution_column('tokens', '{tenant}')"
        ),
    )
    .await
}

#[tokio::test]
async fn a_node_that_is_down_fails_its_tenants_as_unavailable_and_loses_nothing() {
    let Some(db) = on_citus().await else { return };
    db.add_citus().await;
    tokenvault_persistence::migrate(&db.db).await.unwrap();
    // Opened on the distributed database, as a server starting on it is: the adapter learns
    // at connect that the database has Citus.
    let opened =
        tokenvault_persistence::connect(&db.url, tokenvault_persistence::DbOptions::new(4))
            .await
            .unwrap();
    let tenants = SeaOrmTenantRepository::new(opened.clone());
    let tokens = SeaOrmTokenRepository::new(opened.clone());
    // A tenant on each of two workers, each with a token.
    let mut on: std::collections::BTreeMap<i64, uuid::Uuid> = std::collections::BTreeMap::new();
    for _ in 0..64 {
        let t = tenant(&tenants).await;
        on.entry(node_of(&db.db, t).await).or_insert(t);
        if on.len() == 2 {
            break;
        }
    }
    let mut nodes = on.into_iter();
    let ((down_port, down), (_, up)) = (nodes.next().unwrap(), nodes.next().unwrap());
    for t in [down, up] {
        let written = tokens.insert(&token(t, "kept", "/c/", now())).await;
        assert_eq!(written.unwrap(), TokenWrite::Done);
    }
    // The node stops answering: re-pointed, in this database's metadata only, at a port where
    // nothing listens (its rows stay where they are).
    db.execute(&format!(
        "SELECT citus_update_node(nodeid, '127.0.0.1', 1) FROM pg_dist_node \
         WHERE nodeport = {down_port}"
    ))
    .await;
    let read = tokens.get(down, "kept", now()).await;
    assert!(matches!(read, Err(RepoError::Unavailable(_))), "{read:?}");
    let written = tokens.insert(&token(down, "lost?", "/c/", now())).await;
    assert!(
        matches!(written, Err(RepoError::Unavailable(_))),
        "{written:?}"
    );
    // The other worker's tenant goes on.
    let theirs = tokens.get(up, "kept", now()).await.unwrap();
    assert!(theirs.is_some());
    let more = tokens.insert(&token(up, "more", "/c/", now())).await;
    assert_eq!(more.unwrap(), TokenWrite::Done);
    // Back: everything acknowledged is there, nothing refused was stored.
    db.execute(&format!(
        "SELECT citus_update_node(nodeid, '127.0.0.1', {down_port}) FROM pg_dist_node \
         WHERE nodeport = 1"
    ))
    .await;
    let kept = tokens.get(down, "kept", now()).await.unwrap();
    assert!(kept.is_some(), "an acknowledged token is there");
    let refused = tokens.get(down, "lost?", now()).await.unwrap();
    assert!(refused.is_none(), "a refused write is not stored");
    opened.close().await.unwrap();
    db.destroy().await;
}
