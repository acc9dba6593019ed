//! SQLite's activity rows (`usage.rs`, `token_activity`): a job of the file's writer thread
//! per chunk, between token groups. A row already there is skipped, and so is a row of a
//! tenant deleted meanwhile, alone: the other tenants' rows of the same chunk are kept.

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use tokenvault_domain::RepoError;
use uuid::Uuid;

use crate::direct::DirectReads;
use tokenvault_persistence_shared::backend::ActivityWriter;
use tokenvault_persistence_shared::entity::activity;
use tokenvault_persistence_shared::rows::write::{SqliteValues, WriteError, put_row};
use tokenvault_persistence_shared::rows::{self, columns, sqlite_marks};

/// SQLite: a row, skipped if it is there already.
static ACTIVITY: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO token_activity ({}) VALUES ({}) ON CONFLICT DO NOTHING",
        columns::<activity::Column>(None, &[]),
        sqlite_marks::<activity::Column>(&[])
    )
});

fn encoding(e: WriteError) -> RepoError {
    RepoError::Backend(e)
}

/// Writes `entries` on the SQLite writer's connection: one transaction, a cached statement per
/// row.
pub(crate) fn insert_on_writer(
    conn: &rusqlite::Connection,
    entries: &[(Uuid, String, String)],
) -> Result<(), RepoError> {
    let rows = entries
        .iter()
        .map(|entry| {
            let mut values = SqliteValues::untimed();
            put_row(&mut values, &[], |row| rows::activity::put(entry, row)).map(|()| values.values)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(encoding)?;
    crate::tx::transaction(conn, |conn| {
        let mut insert = conn.prepare_cached(&ACTIVITY)?;
        for values in &rows {
            match insert.execute(rusqlite::params_from_iter(values)) {
                Err(rusqlite::Error::SqliteFailure(f, _))
                    if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY => {}
                other => {
                    other?;
                }
            }
        }
        Ok(())
    })
    .map_err(crate::tx::backend)
}

/// A SQLite file's activity writes, on its writer thread.
#[derive(Debug)]
pub(crate) struct SqliteActivity {
    file: Arc<DirectReads>,
}

impl SqliteActivity {
    /// The activity writes of the file behind `file`.
    pub(crate) fn new(file: Arc<DirectReads>) -> Self {
        Self { file }
    }
}

#[async_trait]
impl ActivityWriter for SqliteActivity {
    async fn insert(&self, entries: &[(Uuid, String, String)]) -> Result<(), RepoError> {
        let entries = entries.to_vec();
        self.file
            .writer()
            .run(move |conn| insert_on_writer(conn, &entries))
            .await
    }
}
