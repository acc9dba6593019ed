//! SQLite's write transactions on a rusqlite connection, and the translation of rusqlite's
//! errors: shared by the writer thread (`sqlite/writer.rs`) and the jobs it runs (`sqlite/group_commit.rs`,
//! `sqlite/audit_append.rs`, `sqlite/activity.rs`), below all of them.

use rusqlite::Connection;
use tokenvault_domain::RepoError;

/// Runs `body` in one `BEGIN IMMEDIATE` transaction on `conn`: committed when it returns `Ok`,
/// rolled back otherwise (and when the commit fails).
pub(crate) fn transaction<T, E: From<rusqlite::Error>>(
    conn: &Connection,
    body: impl FnOnce(&Connection) -> Result<T, E>,
) -> Result<T, E> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let done = body(conn).and_then(|value| {
        conn.execute_batch("COMMIT")?;
        Ok(value)
    });
    // Still in the transaction unless the commit ended it.
    if done.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    done
}

/// `err` as the ports' backend error.
pub(crate) fn backend(err: rusqlite::Error) -> RepoError {
    RepoError::Backend(Box::new(err))
}
