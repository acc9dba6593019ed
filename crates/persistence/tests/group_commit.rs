//! The SQLite writer thread's failure paths: it outlives the runtime of its first caller, and a
//! failure of the database reaches every caller of the group instead of leaving them waiting.

mod common;

use sea_orm::ConnectionTrait;
use tokenvault_domain::ports::{TokenRepository, TokenWrite};
use tokenvault_persistence::testing::{Backend, TestDatabase};
use tokenvault_persistence::{SeaOrmTenantRepository, SeaOrmTokenRepository};

use common::{now, tenant, token};

/// The writer is a thread of its own, not a task on the runtime of the first insert (in the
/// server, an HTTP worker's): when that runtime stops, inserts from another still go through.
#[test]
fn the_writer_outlives_the_runtime_of_its_first_caller() {
    let first = tokio::runtime::Runtime::new().unwrap();
    let (db, tokens, tenant_id) = first.block_on(async {
        let db = TestDatabase::create(Backend::Sqlite).await;
        let tenant_id = tenant(&SeaOrmTenantRepository::new(db.db.clone())).await;
        let tokens = SeaOrmTokenRepository::new(db.db.clone());
        let written = tokens.insert(&token(tenant_id, "w-1", "/", now())).await;
        assert_eq!(written.unwrap(), TokenWrite::Done);
        (db, tokens, tenant_id)
    });
    drop(first);
    let second = tokio::runtime::Runtime::new().unwrap();
    second.block_on(async {
        let written = tokens.insert(&token(tenant_id, "w-2", "/", now())).await;
        assert_eq!(written.unwrap(), TokenWrite::Done);
        for id in ["w-1", "w-2"] {
            assert!(tokens.get(tenant_id, id, now()).await.unwrap().is_some());
        }
        db.destroy().await;
    });
}

/// When the database fails for the group (here: the table is gone), every caller of the group
/// gets an error, and none is left waiting.
#[tokio::test]
async fn a_failed_group_answers_every_caller_with_an_error() {
    let db = TestDatabase::create(Backend::Sqlite).await;
    let tenant_id = tenant(&SeaOrmTenantRepository::new(db.db.clone())).await;
    let tokens = SeaOrmTokenRepository::new(db.db.clone());
    let written = tokens.insert(&token(tenant_id, "before", "/", now())).await;
    assert_eq!(written.unwrap(), TokenWrite::Done);
    db.db.execute_unprepared("DROP TABLE tokens").await.unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..40 {
        let t = token(tenant_id, &format!("g-{i}"), "/", now());
        let tokens = tokens.clone();
        tasks.spawn(async move { tokens.insert(&t).await });
    }
    let answers = tasks.join_all().await;
    assert_eq!(answers.len(), 40);
    assert!(answers.iter().all(Result::is_err), "{answers:?}");
    db.destroy().await;
}
