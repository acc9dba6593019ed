//! The development master key's files in the data directory (no `TOKENVAULT_MASTER_KEY` nor
//! `TOKENVAULT_MASTER_KEY_FILE`), and how `keys rotate-master` replaces it without a moment in
//! which the files fail to unwrap a stored tenant key (docs/decisions.md §5):
//!
//! 1. [`DevKeyFiles::stage`]: the new key goes to `master.key.new` (0600, fsynced) before any
//!    tenant key is re-wrapped under it; a staged file holding another key is refused.
//! 2. The re-wrap (`Tenants::rotate_master_key`), tenant by tenant.
//! 3. [`DevKeyFiles::finish`]: the old key goes to `master.key.previous`, then `master.key.new`
//!    is renamed over `master.key`.
//!
//! [`DevKeyFiles::previous_keys`] loads `master.key.previous` and a leftover `master.key.new`
//! as previous keys, so whatever step a rotation stopped at, a start or a CLI run unwraps every
//! tenant key, and running the rotation again with the staged key finishes it.

use std::fs::OpenOptions;
use std::io::{ErrorKind, Write as _};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use tokenvault_crypto::MasterKey;
use zeroize::Zeroizing;

use crate::Config;

/// The key files of a development data directory.
pub(crate) struct DevKeyFiles {
    dir: PathBuf,
    /// `master.key`: the current key.
    pub(crate) current: PathBuf,
    /// `master.key.new`: the key a rotation is moving to, until it is renamed over `current`.
    staged: PathBuf,
    /// `master.key.previous`: the key before the last rotation, one base64 key per line.
    previous: PathBuf,
}

impl DevKeyFiles {
    /// The files, in development mode only (no master key configured).
    pub(crate) fn of(config: &Config) -> Option<Self> {
        if config.keys.master.is_some() || config.keys.master_file.is_some() {
            return None;
        }
        let dir = config.data_dir.clone();
        Some(Self {
            current: dir.join("master.key"),
            staged: dir.join("master.key.new"),
            previous: dir.join("master.key.previous"),
            dir,
        })
    }

    /// The keys of `master.key.previous`, then the staged key of a rotation that did not finish.
    /// A staged file that does not parse was cut short before its fsync, so no tenant key was
    /// wrapped under it: it is left out (the next rotation replaces it).
    pub(crate) fn previous_keys(&self) -> anyhow::Result<Vec<MasterKey>> {
        let mut keys = Vec::new();
        if let Some(text) = read_if_exists(&self.previous)? {
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                keys.push(
                    MasterKey::from_base64(line)
                        .map_err(|e| anyhow::anyhow!("{}: {e}", self.previous.display()))?,
                );
            }
        }
        if let Some(key) = self.staged_key()? {
            tracing::warn!(
                path = %self.staged.display(),
                "a master key rotation did not finish; run `tokenvault keys rotate-master --new-key-file` with this file"
            );
            keys.push(key);
        }
        Ok(keys)
    }

    /// The key in `master.key.new`, if it holds one.
    fn staged_key(&self) -> anyhow::Result<Option<MasterKey>> {
        Ok(read_if_exists(&self.staged)?.and_then(|text| MasterKey::from_base64(&text).ok()))
    }

    /// Step 1: makes sure `master.key.new` holds `new` (`text` is its base64), written and
    /// fsynced before any tenant key is wrapped under it. Refuses when it holds another key:
    /// an interrupted rotation may have wrapped tenant keys under that one.
    pub(crate) fn stage(&self, new: &MasterKey, text: &str) -> anyhow::Result<()> {
        if self.refuse_other_staged(new)? {
            return Ok(());
        }
        // Absent, or cut short before its fsync (nothing was wrapped under it).
        remove_if_exists(&self.staged)?;
        let line = Zeroizing::new(format!("{}\n", text.trim()));
        write_new_private(&self.staged, line.as_bytes())?;
        sync_dir(&self.dir)
    }

    /// Refuses when `master.key.new` holds a key other than `new`; whether it holds `new`.
    pub(crate) fn refuse_other_staged(&self, new: &MasterKey) -> anyhow::Result<bool> {
        match self.staged_key()? {
            Some(staged) if staged.id_hex() == new.id_hex() => Ok(true),
            Some(_) => anyhow::bail!(
                "an earlier master key rotation did not finish: {} holds another key, and tenant \
                 keys may already be wrapped under it; finish that rotation first with \
                 `tokenvault keys rotate-master --new-key-file {}`, then rotate again",
                self.staged.display(),
                self.staged.display()
            ),
            None => Ok(false),
        }
    }

    /// Step 3, once every tenant key is re-wrapped: `master.key.previous` gets `old` (and the
    /// keys it held that `still_needed` keeps, for tenant keys the re-wrap left behind), then
    /// `master.key.new` is renamed over `master.key`. Both files 0600, each step fsynced, so a
    /// crash leaves `master.key` old or new, never torn.
    pub(crate) fn finish(
        &self,
        old: &MasterKey,
        still_needed: impl Fn(&MasterKey) -> bool,
    ) -> anyhow::Result<()> {
        let old_text = read_if_exists(&self.current)?
            .with_context(|| format!("{} is gone", self.current.display()))?;
        let mut lines = Zeroizing::new(format!("{}\n", old_text.trim()));
        if let Some(text) = read_if_exists(&self.previous)? {
            for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                if let Ok(key) = MasterKey::from_base64(line)
                    && key.id_hex() != old.id_hex()
                    && still_needed(&key)
                {
                    lines.push_str(line);
                    lines.push('\n');
                }
            }
        }
        let tmp = self.dir.join("master.key.previous.tmp");
        remove_if_exists(&tmp)?;
        write_new_private(&tmp, lines.as_bytes())?;
        rename(&tmp, &self.previous)?;
        sync_dir(&self.dir)?;
        rename(&self.staged, &self.current)?;
        sync_dir(&self.dir)
    }
}

/// The file's text, `None` when it does not exist.
fn read_if_exists(path: &Path) -> anyhow::Result<Option<Zeroizing<String>>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(Zeroizing::new(text))),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn remove_if_exists(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Creates `path` (it must not exist) owner-only (0600) with `bytes`, and fsyncs it.
fn write_new_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", path.display()))
}

fn rename(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::rename(from, to)
        .with_context(|| format!("cannot rename {} to {}", from.display(), to.display()))
}

/// Makes the directory's entries (a created or renamed file) durable.
fn sync_dir(dir: &Path) -> anyhow::Result<()> {
    #[cfg(unix)]
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot sync {}", dir.display()))?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}
