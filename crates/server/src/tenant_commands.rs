//! `tokenvault tenants create|list|show|delete`: the operator's tenant commands, printing JSON.

use serde_json::{Value, json};
use tokenvault_domain::Error;
use tokenvault_http::dto::TenantResponse;
use uuid::Uuid;

use crate::jobs::{PURGE_BATCH, PURGE_PAUSE};
use crate::{Config, open_vault};

/// `tenants create`: a new tenant and its management key.
///
/// # Errors
/// The vault cannot be opened, or the name is not valid.
pub async fn create(config: &Config, name: &str, owner: Option<Uuid>) -> anyhow::Result<Value> {
    let vault = open_vault(config).await?;
    // The audit entry is written before the key is shown (`run` closes after the answer).
    vault
        .run(async |vault| {
            let made = vault
                .tenants
                .provision_tenant(name, owner, None)
                .await
                .map_err(|e| anyhow::anyhow!("cannot create the tenant: {e}"))?;
            vault
                .audit
                .flush_audit()
                .await
                .map_err(|e| anyhow::anyhow!("cannot write the audit log: {e}"))?;
            Ok(json!({
                "tenant": TenantResponse::from(made.tenant),
                "management_key": made.key.expose(),
            }))
        })
        .await
}

/// `tenants list`: every tenant, oldest first (no keys, no data).
///
/// # Errors
/// The vault cannot be opened or read.
pub async fn list(config: &Config) -> anyhow::Result<Value> {
    let tenants = open_vault(config)
        .await?
        .run(async |vault| {
            vault
                .tenants
                .list_tenants()
                .await
                .map_err(|e| anyhow::anyhow!("cannot list the tenants: {e}"))
        })
        .await?;
    Ok(json!({
        "tenants": tenants.into_iter().map(TenantResponse::from).collect::<Vec<_>>(),
    }))
}

/// `tenants show`: one tenant and its live tokens per type.
///
/// # Errors
/// No such tenant, or the vault cannot be read.
pub async fn show(config: &Config, id: Uuid) -> anyhow::Result<Value> {
    let summary = open_vault(config)
        .await?
        .run(async |vault| {
            vault.tenants.tenant_summary(id).await.map_err(|e| match e {
                Error::NotFound => anyhow::anyhow!("no tenant {id}"),
                e => anyhow::anyhow!("cannot read tenant {id}: {e}"),
            })
        })
        .await?;
    let tokens: serde_json::Map<String, Value> = summary
        .tokens
        .iter()
        .map(|c| (c.token_type.clone(), json!(c.count)))
        .collect();
    Ok(json!({
        "tenant": TenantResponse::from(summary.tenant),
        "tokens": tokens,
    }))
}

/// `tenants delete`: the tenant and everything it owns, for good. `confirmed` is `--yes`.
///
/// # Errors
/// Not confirmed, no such tenant, or the vault cannot be written.
pub async fn delete(config: &Config, id: Uuid, confirmed: bool) -> anyhow::Result<Value> {
    anyhow::ensure!(
        confirmed,
        "deleting tenant {id} removes its tokens, applications, reactors and proxies for good; \
         add --yes to do it"
    );
    let purged = open_vault(config)
        .await?
        .run(async |vault| {
            vault.tenants.remove_tenant(id).await.map_err(|e| match e {
                Error::NotFound => anyhow::anyhow!("no tenant {id}"),
                e => anyhow::anyhow!("cannot delete tenant {id}: {e}"),
            })?;
            // The server's purge job would remove the rows too; the operator waits for it
            // here, so that the command is done when it answers, whether a server runs or not.
            let mut purged = 0u64;
            loop {
                // A pause between statements (`PURGE_PAUSE`, as the server's job): a server
                // running on the same SQLite file takes turns at the one write lock with this.
                tokio::time::sleep(PURGE_PAUSE).await;
                match vault.tenants.purge_deleted_tenants(PURGE_BATCH).await {
                    Ok(0) => break Ok(purged),
                    Ok(n) => purged += n,
                    Err(e) => {
                        anyhow::bail!("tenant {id} is deleted, but purging its rows failed: {e}")
                    }
                }
            }
        })
        .await?;
    Ok(json!({ "deleted": id, "rows_purged": purged }))
}
