//! Closing a database stops its engine for every clone: the threads `connect` started end
//! after the work queued before them, a SQLite file's log is copied back into it, and a write
//! after the close fails at once. Alone in its test binary, so the threads counted are this
//! test's own.

use std::time::Duration;

use tokenvault_domain::ports::{TokenRepository, TokenWrite};
use tokenvault_persistence::testing::{Backend, TestDatabase, backends};
use tokenvault_persistence::{DbOptions, SeaOrmTenantRepository, SeaOrmTokenRepository, connect};

mod common;

use common::{now, tenant, token};

/// The engine's threads running in this process, by name.
fn engine_threads() -> Vec<String> {
    let mut names = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").expect("/proc/self/task") {
        let comm = std::fs::read_to_string(task.expect("a thread").path().join("comm"))
            .unwrap_or_default();
        let comm = comm.trim();
        if ["sqlite-writer", "sqlite-checkpoi", "pg-writer", "pg-audit"].contains(&comm) {
            names.push(comm.to_owned());
        }
    }
    names.sort();
    names
}

fn wal_bytes(url: &str) -> u64 {
    let file = tokenvault_persistence::sqlite::backup::sqlite_file(url).expect("a SQLite URL");
    let mut wal = file.into_os_string();
    wal.push("-wal");
    std::fs::metadata(wal).map_or(0, |m| m.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_stops_the_engine_after_its_queued_work() {
    for backend in backends() {
        let db = TestDatabase::create(backend).await;
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let tokens = SeaOrmTokenRepository::new(db.db.clone());
        let tenant_id = tenant(&tenants).await;
        // Through the engine's writer thread on either backend.
        let written: Vec<_> = (0..50)
            .map(|i| {
                let tokens = tokens.clone();
                tokio::spawn(async move {
                    tokens
                        .insert(&token(tenant_id, &format!("t-{i}"), "/", now()))
                        .await
                })
            })
            .collect();
        for outcome in written {
            assert_eq!(outcome.await.unwrap().unwrap(), TokenWrite::Done);
        }
        let expected = match backend {
            Backend::Sqlite => vec!["sqlite-checkpoi", "sqlite-writer"],
            Backend::Postgres => vec!["pg-audit", "pg-writer"],
        };
        assert_eq!(engine_threads(), expected, "{backend:?}: running");
        // An outside connection stays open, so SQLite does not delete the log when the engine's
        // last connection closes: its size then shows the checkpoint at close.
        let outside = (backend == Backend::Sqlite).then(|| {
            let file =
                tokenvault_persistence::sqlite::backup::sqlite_file(&db.url).expect("a SQLite URL");
            rusqlite::Connection::open(file).expect("an outside connection")
        });
        if backend == Backend::Sqlite {
            assert!(wal_bytes(&db.url) > 0, "the writes are in the log");
        }
        // More inserts, still in flight when the close begins.
        let in_flight: Vec<_> = (50..250)
            .map(|i| {
                let tokens = tokens.clone();
                tokio::spawn(async move {
                    let id = format!("t-{i}");
                    (
                        id.clone(),
                        tokens.insert(&token(tenant_id, &id, "/", now())).await,
                    )
                })
            })
            .collect();
        tokio::task::yield_now().await;

        db.db.clone().close().await.unwrap();

        assert!(engine_threads().is_empty(), "{backend:?}: ended");
        if backend == Backend::Sqlite {
            assert_eq!(wal_bytes(&db.url), 0, "the log is copied back at close");
        }
        drop(outside);
        // Each answered at once, and none acknowledged is lost (checked below).
        let mut acknowledged = Vec::new();
        for task in in_flight {
            let (id, outcome) = tokio::time::timeout(Duration::from_secs(5), task)
                .await
                .expect("an insert in flight at the close is answered")
                .expect("the insert task");
            if outcome.is_ok() {
                acknowledged.push(id);
            }
        }
        // Every clone is closed: a write fails, and at once.
        let late = tokio::time::timeout(
            Duration::from_secs(5),
            tokens.insert(&token(tenant_id, "late", "/", now())),
        )
        .await
        .expect("a write after the close answers at once");
        assert!(late.is_err(), "{backend:?}: a write after the close fails");
        let read =
            tokio::time::timeout(Duration::from_secs(5), tokens.get(tenant_id, "t-1", now()))
                .await
                .expect("a read after the close answers at once");
        assert!(read.is_err(), "{backend:?}: a read after the close fails");

        // What was written before the close is there when the database is opened again.
        let again = connect(&db.url, DbOptions::new(2)).await.unwrap();
        let reopened = SeaOrmTokenRepository::new(again.clone());
        for id in (0..50).map(|i| format!("t-{i}")).chain(acknowledged) {
            assert!(
                reopened.get(tenant_id, &id, now()).await.unwrap().is_some(),
                "{backend:?}: {id} kept"
            );
        }
        assert!(
            reopened
                .get(tenant_id, "late", now())
                .await
                .unwrap()
                .is_none()
        );
        again.close().await.unwrap();
        db.destroy().await;
    }
}
