//! The master key: local (the environment, a file, or in development mode `<data dir>/master.key`)
//! or in Transit, and the cipher built on it (`tokenvault keys rotate-master`: `rotate.rs`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use secrecy::ExposeSecret;
use tokenvault_crypto::transit::{TransitKeys, TransitSettings};
use tokenvault_crypto::{EnvelopeCipher, LocalMasterKeys, MasterKey, WrappingChain};
use tokenvault_domain::ports::KeyWrapping;

use crate::{Config, dev_key};

/// The master key in effect: `TOKENVAULT_MASTER_KEY`, else `TOKENVAULT_MASTER_KEY_FILE`, else
/// (development mode) `<data_dir>/master.key`, generated with mode 0600 on first use.
pub fn current_master_key(config: &Config) -> anyhow::Result<MasterKey> {
    if let Some(key) = &config.keys.master {
        return MasterKey::from_base64(key.expose_secret()).map_err(anyhow::Error::msg);
    }
    if let Some(path) = &config.keys.master_file {
        warn_if_readable_by_others(path);
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the master key file {}", path.display()))?;
        return MasterKey::from_base64(&text).map_err(anyhow::Error::msg);
    }
    let path = config.data_dir.join("master.key");
    if !path.exists() {
        create_private_dir(&config.data_dir)?;
        let key = MasterKey::generate_base64();
        write_private(&path, key.as_bytes())?;
        tracing::warn!(
            path = %path.display(),
            "development mode: generated a master key; set TOKENVAULT_MASTER_KEY or TOKENVAULT_MASTER_KEY_FILE in production"
        );
    }
    let text = std::fs::read_to_string(&path)?;
    MasterKey::from_base64(&text).map_err(anyhow::Error::msg)
}

/// Creates the data directory owner-only (0700). An existing directory is left as it is.
pub(crate) fn create_private_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .with_context(|| format!("cannot create the data directory {}", dir.display()))
}

/// Warns when a master key file may be read by users other than its owner.
pub(crate) fn warn_if_readable_by_others(path: &std::path::Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if let Ok(meta) = std::fs::metadata(path)
            && meta.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(
                path = %path.display(),
                "the master key file is readable by other users; make it 0600"
            );
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

pub(crate) fn write_private(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    Ok(())
}

/// The master keys accepted for unwrapping besides the current one:
/// `TOKENVAULT_PREVIOUS_MASTER_KEYS`, and in development mode `<data_dir>/master.key.previous`
/// and the staged key of a rotation that did not finish (`dev_key`).
pub(crate) fn previous_master_keys(config: &Config) -> anyhow::Result<Vec<MasterKey>> {
    let mut keys: Vec<MasterKey> = config.keys.previous.as_ref().map_or_else(
        || Ok(Vec::new()),
        |list| {
            list.expose_secret()
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .map(|k| MasterKey::from_base64(k).map_err(anyhow::Error::msg))
                .collect::<anyhow::Result<_>>()
        },
    )?;
    if let Some(files) = dev_key::DevKeyFiles::of(config) {
        keys.extend(files.previous_keys()?);
    }
    Ok(keys)
}

/// The cipher of this configuration: tenant keys wrapped by Transit when
/// `TOKENVAULT_TRANSIT_ADDRESS` is set (checked now: reachable, token accepted, key present),
/// the local master keys then only unwrapping older tenant keys; else by the local master key.
pub(crate) async fn master_cipher(config: &Config) -> anyhow::Result<EnvelopeCipher> {
    let Some(transit) = &config.keys.transit else {
        return Ok(EnvelopeCipher::new(
            current_master_key(config)?,
            previous_master_keys(config)?,
        ));
    };
    let token_file = &transit.token_file;
    warn_if_readable_by_others(token_file);
    let token =
        zeroize::Zeroizing::new(std::fs::read_to_string(token_file).with_context(|| {
            format!(
                "TOKENVAULT_TRANSIT_TOKEN_FILE: cannot read {}",
                token_file.display()
            )
        })?);
    let settings = transit;
    let transit = TransitKeys::new(TransitSettings {
        address: settings.address.clone(),
        mount: settings.mount.clone(),
        key: settings.key.clone(),
        token,
        token_file: Some(token_file.clone()),
        timeout: Duration::from_secs(10),
    })
    .map_err(anyhow::Error::msg)?;
    let version = transit
        .check()
        .await
        .map_err(|e| anyhow::anyhow!("Transit: {e}"))?;
    tracing::info!(key = %settings.key, version, "the master key is in Transit");
    let mut previous: Vec<Arc<dyn KeyWrapping>> = Vec::new();
    // Local keys only when named: a development master.key left in the data directory is not
    // taken silently (whoever held it could slip in a tenant key wrapped under it).
    if config.keys.master.is_some() || config.keys.master_file.is_some() {
        previous.push(Arc::new(LocalMasterKeys::new(
            current_master_key(config)?,
            previous_master_keys(config)?,
        )));
    }
    Ok(EnvelopeCipher::with_wrapping(Arc::new(WrappingChain::new(
        Arc::new(transit),
        previous,
    ))))
}
