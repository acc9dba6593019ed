//! A consistent copy of a SQLite vault while it serves (`tokenvault backup`), and the reads
//! `tokenvault restore` makes of a copy before it is put in place. SQLite's online backup API
//! (rusqlite's `backup`) copies every page in one step: the step holds a read transaction, so
//! the copy is one snapshot, and in WAL mode writers go on meanwhile (a copy in several steps
//! would restart whenever a writer commits, and never end under load).

use std::path::{Path, PathBuf};
use std::str::FromStr as _;
use std::time::Duration;

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};
use sea_orm::sqlx::sqlite::SqliteConnectOptions;
use uuid::Uuid;

/// The file of a `sqlite:` database URL; `None` for any other database.
pub fn sqlite_file(url: &str) -> Option<PathBuf> {
    if !url.starts_with("sqlite:") {
        return None;
    }
    SqliteConnectOptions::from_str(url)
        .ok()
        .map(|o| o.get_filename().to_path_buf())
}

/// What a copy holds.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Copied {
    /// Database pages copied.
    pub pages: i32,
    /// Tenants in the copy.
    pub tenants: usize,
}

fn backup_err(e: &rusqlite::Error) -> String {
    e.to_string()
}

/// Copies the database at `from` into a new file `to` (which must not exist), as one
/// consistent snapshot, and checks the copy (`PRAGMA quick_check`). Blocking.
///
/// # Errors
/// `to` exists, either file cannot be opened, or the copy is not sound.
pub fn copy(from: &Path, to: &Path) -> Result<Copied, String> {
    if to.exists() {
        return Err(format!("{} exists; give a new file", to.display()));
    }
    let source = Connection::open_with_flags(from, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| format!("{}: {e}", from.display()))?;
    source
        .busy_timeout(Duration::from_secs(30))
        .map_err(|e| backup_err(&e))?;
    let partial = partial_name(to);
    let _ = std::fs::remove_file(&partial);
    // Created here, owner-only and new (never through a file or link placed beforehand):
    // SQLite keeps an existing file's mode, and gives its journal the same.
    create_private(&partial)?;
    let mut target = Connection::open(&partial).map_err(|e| format!("{}: {e}", to.display()))?;
    let pages = {
        let backup = Backup::new(&source, &mut target).map_err(|e| backup_err(&e))?;
        // -1: every page in one step, one read transaction: one snapshot. (rusqlite's
        // `run_to_completion` takes positive steps only.) Busy or locked: a writer holds the
        // lock a moment; try again, for at most 30 s.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            match backup.step(-1).map_err(|e| backup_err(&e))? {
                StepResult::Done => break,
                StepResult::More | StepResult::Busy | StepResult::Locked
                    if std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
                _ => return Err("the database stayed locked for 30 s".into()),
            }
        }
        backup.progress().pagecount
    };
    // The copy is a plain rollback-journal database file (no -wal beside it).
    target
        .pragma_update(None, "journal_mode", "DELETE")
        .map_err(|e| backup_err(&e))?;
    let checked = check(&target);
    drop(target);
    let tenants = match checked {
        Ok(keys) => keys.len(),
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    sync_file(&partial)?;
    // A hard link fails when `to` appeared meanwhile: a copy never replaces a file.
    let linked = std::fs::hard_link(&partial, to).map_err(|e| format!("{}: {e}", to.display()));
    let _ = std::fs::remove_file(&partial);
    linked?;
    Ok(Copied { pages, tenants })
}

fn create_private(path: &Path) -> Result<(), String> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(path)
        .map(drop)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// `<file>.partial`: where a copy is made before it gets its name.
fn partial_name(to: &Path) -> PathBuf {
    let mut name = to.as_os_str().to_owned();
    name.push(".partial");
    PathBuf::from(name)
}

fn sync_file(path: &Path) -> Result<(), String> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// `PRAGMA quick_check`, then every tenant's wrapped data key.
fn check(conn: &Connection) -> Result<Vec<(Uuid, Vec<u8>)>, String> {
    let verdict: String = conn
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .map_err(|e| backup_err(&e))?;
    if verdict != "ok" {
        return Err(format!("the database is damaged: {verdict}"));
    }
    // A deleted tenant (a tombstone whose rows are being purged) has no key any more; a
    // backup made before tombstones existed has no such column.
    let tombstones: bool = conn
        .query_row(
            "SELECT COUNT(*) > 0 FROM pragma_table_info('tenants') WHERE name = 'deleted_at'",
            [],
            |r| r.get(0),
        )
        .map_err(|e| backup_err(&e))?;
    let live = if tombstones {
        "SELECT id, data_key FROM tenants WHERE deleted_at IS NULL"
    } else {
        "SELECT id, data_key FROM tenants"
    };
    let mut statement = conn
        .prepare(live)
        .map_err(|e| format!("not a TokenVault database: {e}"))?;
    let rows = statement
        .query_map([], |r| {
            Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, Option<Vec<u8>>>(1)?))
        })
        .map_err(|e| backup_err(&e))?;
    let keys: Vec<(Uuid, Vec<u8>)> = rows
        .map(|row| {
            let (id, key) = row.map_err(|e| backup_err(&e))?;
            let id = Uuid::from_slice(&id).map_err(|e| format!("a tenant id: {e}"))?;
            // Every tenant has a wrapped key since its creation; one without could take a
            // fresh key at first use, under whatever master key reads this file.
            match key {
                Some(key) if !key.is_empty() => Ok((id, key)),
                _ => Err(format!("tenant {id} has no data key")),
            }
        })
        .collect::<Result<_, String>>()?;
    Ok(keys)
}

/// The tenants' wrapped data keys of the backup at `path`, after checking it is sound.
/// Blocking; opens it read-only.
///
/// # Errors
/// Not a sound TokenVault database.
pub fn data_keys(path: &Path) -> Result<Vec<(Uuid, Vec<u8>)>, String> {
    if !path.is_file() {
        return Err(format!("{} is not a file", path.display()));
    }
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // A backup is a file from elsewhere: no function of its schema (views, triggers) runs.
    conn.pragma_update(None, "trusted_schema", false)
        .map_err(|e| backup_err(&e))?;
    let keys = check(&conn)?;
    // Nothing to check the master key against: a restore of it proves nothing.
    if keys.is_empty() {
        return Err("it holds no tenant".into());
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sqlite_urls_have_a_file() {
        assert_eq!(
            sqlite_file("sqlite:///tmp/tv/tokenvault.db?mode=rwc"),
            Some(PathBuf::from("/tmp/tv/tokenvault.db"))
        );
        assert_eq!(sqlite_file("postgres://u@h/db"), None);
    }

    #[test]
    fn a_copy_is_a_sound_snapshot_and_never_overwrites() {
        let dir = std::env::temp_dir().join(format!("tv-backup-{}", Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let from = dir.join("live.db");
        let live = Connection::open(&from).unwrap();
        live.execute_batch(
            "PRAGMA journal_mode=WAL; CREATE TABLE tenants (id BLOB PRIMARY KEY, data_key BLOB);",
        )
        .unwrap();
        let id = Uuid::new_v4();
        live.execute(
            "INSERT INTO tenants VALUES (?1, ?2)",
            (id.as_bytes().to_vec(), vec![1u8, 2, 3]),
        )
        .unwrap();
        let to = dir.join("copy.db");
        let copied = copy(&from, &to).unwrap();
        assert_eq!(copied.tenants, 1);
        assert_eq!(data_keys(&to).unwrap(), vec![(id, vec![1, 2, 3])]);
        assert!(copy(&from, &to).unwrap_err().contains("exists"));
        assert!(!partial_name(&to).exists());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&to).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "a backup is owner-only");
        }
        // A tenant without a data key could take one under any master key: refused.
        live.execute(
            "INSERT INTO tenants VALUES (?1, NULL)",
            [Uuid::new_v4().as_bytes().to_vec()],
        )
        .unwrap();
        let keyless = dir.join("keyless.db");
        assert!(copy(&from, &keyless).unwrap_err().contains("no data key"));
        assert!(!keyless.exists() && !partial_name(&keyless).exists());
        std::fs::write(
            dir.join("junk.db"),
            b"not a database at all, not even close",
        )
        .unwrap();
        assert!(data_keys(&dir.join("junk.db")).is_err());
        let _ = std::fs::remove_dir_all(dir);
    }
}
