//! `tokenvault backup <file>` and `tokenvault restore <file>` for a SQLite vault. A backup holds
//! the database only: the master key is never in it (it is in `TOKENVAULT_MASTER_KEY(_FILE)`,
//! a key manager, or in development mode `<data dir>/master.key`, a file the backup leaves
//! out). On PostgreSQL
//! the database's own tools make the copy (`pg_dump`, docs/operations.md).

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::{Value, json};
use tokenvault_domain::ports::Cipher as _;
use tokenvault_persistence::sqlite::backup as sqlite_backup;

use crate::{Config, create_private_dir};

fn sqlite_file(config: &Config) -> anyhow::Result<PathBuf> {
    sqlite_backup::sqlite_file(&config.effective_database_url()).ok_or_else(|| {
        anyhow::anyhow!(
            "the configured database is PostgreSQL: back it up with pg_dump and restore it with \
             pg_restore (docs/operations.md); tokenvault backup copies a SQLite vault"
        )
    })
}

/// Copies the configured SQLite vault into `dest` (a new file) while servers keep serving.
///
/// # Errors
/// Not SQLite, `dest` exists, or the copy failed.
pub async fn backup(config: &Config, dest: &Path) -> anyhow::Result<Value> {
    let source = sqlite_file(config)?;
    anyhow::ensure!(
        source.is_file(),
        "no vault at {} (TOKENVAULT_DATA_DIR / DATABASE_URL)",
        source.display()
    );
    let to = dest.to_path_buf();
    let copied = tokio::task::spawn_blocking(move || sqlite_backup::copy(&source, &to))
        .await
        .context("the backup task")?
        .map_err(|e| anyhow::anyhow!("backup failed: {e}"))?;
    Ok(json!({
        "backup": dest,
        "pages": copied.pages,
        "tenants": copied.tenants,
        "master_key": "not in the backup: keep it apart (docs/operations.md)",
    }))
}

/// Puts the backup `from` in place as the configured SQLite vault, which must not exist yet,
/// once every tenant key in it unwraps under the configured master keys (nothing is written
/// otherwise).
///
/// # Errors
/// Not SQLite, a vault already there, no master key to check with, a key that does not unwrap,
/// or a damaged backup.
pub async fn restore(config: &Config, from: &Path) -> anyhow::Result<Value> {
    let target = sqlite_file(config)?;
    anyhow::ensure!(
        !target.exists(),
        "a vault is already at {}: restore into a fresh data directory (move this one away \
         first)",
        target.display()
    );
    // A journal left by an earlier vault would be replayed onto the restored file.
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = target.as_os_str().to_owned();
        name.push(suffix);
        let beside = PathBuf::from(name);
        anyhow::ensure!(
            !beside.exists(),
            "{} is left from an earlier vault and would be replayed onto the restored one: \
             move it away with that vault",
            beside.display()
        );
    }
    let development = config.development_master_key();
    anyhow::ensure!(
        !development || config.data_dir.join("master.key").is_file(),
        "no master key to check the backup with: set TOKENVAULT_MASTER_KEY_FILE (or \
         TOKENVAULT_MASTER_KEY), or in development mode put the backup's master.key into {} \
         first",
        config.data_dir.display()
    );
    if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_private_dir(dir)?;
    }
    // The checks read the copy that is put in place, not the file given (which could change
    // in between): copied beside the target first, then checked, then linked into place.
    let mut staged = target.as_os_str().to_owned();
    staged.push(".restoring");
    let staged = PathBuf::from(staged);
    let _ = std::fs::remove_file(&staged);
    let (source, to) = (from.to_path_buf(), staged.clone());
    let copied = tokio::task::spawn_blocking(move || {
        sqlite_backup::copy(&source, &to)?;
        sqlite_backup::data_keys(&to)
    })
    .await
    .context("the restore task")?
    .map_err(|e| anyhow::anyhow!("{}: {e}", from.display()));
    let keys = match copied {
        Ok(keys) => keys,
        Err(e) => {
            let _ = std::fs::remove_file(&staged);
            return Err(e);
        }
    };
    let foreign = match foreign_keys(config, &keys).await {
        Ok(foreign) => foreign,
        Err(e) => {
            let _ = std::fs::remove_file(&staged);
            return Err(e);
        }
    };
    if let Some(first) = foreign.first() {
        let _ = std::fs::remove_file(&staged);
        anyhow::bail!(
            "{} of {} tenant keys in {} (first: tenant {first}) do not unwrap under the \
             configured master key: the backup belongs to another master key. Nothing was \
             restored.",
            foreign.len(),
            keys.len(),
            from.display()
        );
    }
    // A hard link fails if a vault appeared at the target meanwhile: never replaced.
    let linked = std::fs::hard_link(&staged, &target);
    let _ = std::fs::remove_file(&staged);
    linked.with_context(|| format!("cannot put the vault at {}", target.display()))?;
    Ok(json!({ "restored": target, "tenants": keys.len() }))
}

/// The tenants whose key does not unwrap under the configured master keys.
async fn foreign_keys(
    config: &Config,
    keys: &[(uuid::Uuid, Vec<u8>)],
) -> anyhow::Result<Vec<uuid::Uuid>> {
    let cipher = crate::master_cipher(config).await?;
    let mut foreign = Vec::new();
    for (tenant, wrapped) in keys {
        if cipher.load_tenant_key(*tenant, wrapped).await.is_err() {
            foreign.push(*tenant);
        }
    }
    Ok(foreign)
}
