//! The bundled SQLite is built as `.cargo/config.toml` asks.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use sea_orm::{ConnectionTrait, DatabaseBackend, Statement};
use tokenvault_persistence::testing::{Backend, TestDatabase};

/// Without the query planner stability guarantee every `LIMIT ?` statement is parsed and planned
/// again on each execution (docs/performance-journal.md).
#[tokio::test]
async fn sqlite_is_built_with_the_query_planner_stability_guarantee() {
    let db = TestDatabase::create(Backend::Sqlite).await;
    let rows = db
        .db
        .query_all_raw(Statement::from_string(
            DatabaseBackend::Sqlite,
            "PRAGMA compile_options",
        ))
        .await
        .unwrap();
    let options: Vec<String> = rows
        .iter()
        .map(|row| row.try_get_by_index(0).unwrap())
        .collect();
    assert!(options.iter().any(|o| o == "ENABLE_QPSG"), "{options:?}");
    db.destroy().await;
}
