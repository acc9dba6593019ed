//! The use cases for one CLI command (`tokenvault tenants …`, `keys rotate-master`,
//! `ceilings`): opened as the server opens them, closed as the server closes them.

use anyhow::Context as _;
use tokenvault_domain::Vault;
use tokenvault_persistence::Database;

use crate::config::Config;
use crate::wiring::{Opened, Shared, open_metered_vault};

/// Opens (creating if needed) and migrates the database, and builds the use cases on it, for
/// one command; [`CommandVault::close`] it when the command is done.
pub async fn open_vault(config: &Config) -> anyhow::Result<CommandVault> {
    let Opened { vault, db, .. } = open_metered_vault(config, &Shared::new(config), false).await?;
    Ok(CommandVault { vault, db })
}

/// The use cases of a command (`tokenvault tenants …`, `keys rotate-master`, `ceilings`) and
/// the database under them.
pub struct CommandVault {
    /// The use cases.
    pub vault: Vault,
    pub(crate) db: Database,
}

impl std::ops::Deref for CommandVault {
    type Target = Vault;

    fn deref(&self) -> &Vault {
        &self.vault
    }
}

impl CommandVault {
    /// Ends the command as the server ends: writes the audit entries and activity it left in
    /// memory, then closes the database, whose threads end once their queues are written (and a
    /// SQLite file's log is copied back into it).
    ///
    /// # Errors
    /// What could not be written; the database is closed all the same.
    pub async fn close(self) -> anyhow::Result<()> {
        let audit = self.vault.audit.flush_audit().await;
        let activity = self.vault.usage.flush_activity().await;
        let closed = self.db.close().await;
        audit.map_err(|e| anyhow::anyhow!("cannot write the audit log: {e}"))?;
        activity.map_err(|e| anyhow::anyhow!("cannot write the token activity: {e}"))?;
        closed.context("cannot close the database")?;
        Ok(())
    }

    /// Runs `command` on the use cases, then [`Self::close`], whatever `command` answered. A
    /// command that succeeded has committed its work, and its answer may be the one sight of a
    /// new key: a close that fails after it is logged, and the answer given.
    ///
    /// # Errors
    /// `command`'s error.
    pub async fn run<T>(
        self,
        command: impl AsyncFnOnce(&Vault) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let answer = command(&self.vault).await;
        if let Err(e) = self.close().await {
            tracing::warn!(error = %format!("{e:#}"), "closing the database after the command failed");
        }
        answer
    }
}
