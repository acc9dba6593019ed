//! Master-key operations: re-wrapping tenant keys under a new master key, and the start-up
//! check that every stored tenant key unwraps under the master keys the server was given.

use uuid::Uuid;

use super::Tenants;
use crate::error::Error;

impl Tenants {
    /// `tokenvault keys rotate-master`: re-wraps every tenant key under the cipher's current
    /// master key. Tenants already current are skipped; returns how many were re-wrapped.
    /// Safe while servers run: they keep their unwrapped keys, and a concurrent change of the
    /// same tenant key is detected (compare-and-set) and left to the next run.
    pub async fn rotate_master_key(&self) -> Result<u64, Error> {
        let mut rewrapped = 0;
        for (tenant_id, wrapped) in self.store.data_keys().await? {
            let fresh = self.cipher.rewrap(tenant_id, &wrapped).await.map_err(|e| {
                Error::internal_from(format!("cannot re-wrap the key of tenant {tenant_id}"), e)
            })?;
            if let Some(fresh) = fresh
                && self
                    .store
                    .replace_data_key(tenant_id, &wrapped, &fresh)
                    .await?
            {
                rewrapped += 1;
            }
        }
        Ok(rewrapped)
    }
}

impl Tenants {
    /// Start-up check (docs/decisions.md, Keys): the tenants whose stored data key does not
    /// unwrap under any master key this process holds. A server must not serve them: every
    /// token request of theirs would fail. Keys that unwrap are cached on the way.
    pub async fn tenants_without_master_key(&self) -> Result<Vec<Uuid>, Error> {
        let mut foreign = Vec::new();
        for (tenant_id, wrapped) in self.store.data_keys().await? {
            if wrapped.is_empty() {
                continue;
            }
            if self
                .cipher
                .load_tenant_key(tenant_id, &wrapped)
                .await
                .is_err()
            {
                foreign.push(tenant_id);
            }
        }
        Ok(foreign)
    }
}
