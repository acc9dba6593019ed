//! `tokenvault keys rotate-master`: every tenant key re-wrapped under the newest master key, in
//! Transit or local.

use futures_util::FutureExt as _;
use tokenvault_crypto::{EnvelopeCipher, MasterKey};
use tokenvault_domain::ports::{Cipher as _, TenantKeys as _};
use tokenvault_persistence::SeaOrmTenantRepository;

use crate::keys::{current_master_key, master_cipher, previous_master_keys};
use crate::{CommandVault, Config, Opened, Shared, dev_key, open_vault_with};

/// `tokenvault keys rotate-master` with the master key in Transit: re-wraps every tenant key
/// under the Transit key's newest version (rotate it in Transit first), and any tenant key still
/// wrapped by a local master key (moving a vault to Transit).
pub async fn rotate_in_transit(config: &Config) -> anyhow::Result<serde_json::Value> {
    let Opened { vault, db, .. } = open_vault_with(
        config,
        master_cipher(config).await?,
        &Shared::new(config),
        false,
    )
    .await?;
    let rewrapped = CommandVault { vault, db }
        .run(async |vault| {
            vault
                .tenants
                .rotate_master_key()
                .await
                .map_err(|e| anyhow::anyhow!("rotation failed: {e}"))
        })
        .await?;
    Ok(serde_json::json!({
        "rewrapped_tenant_keys": rewrapped,
        "master_key": "Transit",
        "transit_key": config.keys.transit.as_ref().map(|t| &t.key),
    }))
}

/// `tokenvault keys rotate-master`: re-wraps every tenant key under `new_key` (base64). The
/// configured master key (and any previous ones) must still unwrap the current keys.
///
/// In development mode (no master key configured) the data directory's `master.key` is
/// replaced too, in the steps of `dev_key`: the new key is staged in `master.key.new` before
/// the re-wrap, and once it is done the old key moves to `master.key.previous` and the new one
/// to `master.key`. With a configured key the files are the operator's: nothing is written.
pub async fn rotate_master_key(
    config: &Config,
    new_key: &str,
) -> anyhow::Result<serde_json::Value> {
    let new = MasterKey::from_base64(new_key).map_err(anyhow::Error::msg)?;
    let current = current_master_key(config)?;
    let mut accepted = vec![current.clone()];
    accepted.extend(previous_master_keys(config)?);
    let id = new.id_hex();
    let files = dev_key::DevKeyFiles::of(config);
    let replaces_file = files.is_some() && id != current.id_hex();
    if let Some(files) = &files {
        if replaces_file {
            files.stage(&new, new_key)?;
        } else {
            // Already the current key: nothing to replace, but never beside a staged other key.
            files.refuse_other_staged(&new)?;
        }
    }
    let Opened { vault, db, .. } = open_vault_with(
        config,
        EnvelopeCipher::new(new.clone(), accepted),
        &Shared::new(config),
        false,
    )
    .await?;
    let tenants = SeaOrmTenantRepository::new(db.clone());
    let finishing = files.filter(|_| replaces_file);
    let (rewrapped, wrapped) = CommandVault { vault, db }
        .run(async |vault| {
            let rewrapped = vault
                .tenants
                .rotate_master_key()
                .await
                .map_err(|e| anyhow::anyhow!("rotation failed: {e}"))?;
            // A key of the old `master.key.previous` is kept only while a tenant key the
            // re-wrap left behind (changed meanwhile, see `Tenants::rotate_master_key`) still
            // needs it: the keys as they are now, read before the database closes.
            let wrapped = match &finishing {
                Some(_) => tenants
                    .data_keys()
                    .await
                    .map_err(|e| anyhow::anyhow!("cannot read the tenant keys: {e}"))?,
                None => Vec::new(),
            };
            Ok((rewrapped, wrapped))
        })
        .await?;
    let mut printed =
        serde_json::json!({ "rewrapped_tenant_keys": rewrapped, "master_key_id": id });
    if let Some(files) = finishing {
        files.finish(&current, |key| {
            let only = EnvelopeCipher::new(key.clone(), Vec::new());
            // A local key unwraps without waiting: its future is ready at once.
            wrapped.iter().any(|(tenant, w)| {
                !w.is_empty()
                    && only
                        .load_tenant_key(*tenant, w)
                        .now_or_never()
                        .is_some_and(|r| r.is_ok())
            })
        })?;
        printed["master_key_file"] = files.current.display().to_string().into();
    }
    Ok(printed)
}
