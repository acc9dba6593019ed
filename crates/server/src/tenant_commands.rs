//! `tokenvault tenants create|list|show|delete`: the operator's tenant commands, printing JSON.

use serde_json::{Value, json};
use tokenvault_domain::Error;
use tokenvault_http::dto::TenantResponse;
use uuid::Uuid;

use crate::{Config, open_vault};

/// `tenants create`: a new tenant and its management key.
///
/// # Errors
/// The vault cannot be opened, or the name is not valid.
pub async fn create(config: &Config, name: &str, owner: Option<Uuid>) -> anyhow::Result<Value> {
    let vault = open_vault(config).await?;
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
}

/// `tenants list`: every tenant, oldest first (no keys, no data).
///
/// # Errors
/// The vault cannot be opened or read.
pub async fn list(config: &Config) -> anyhow::Result<Value> {
    let vault = open_vault(config).await?;
    let tenants = vault
        .tenants
        .list_tenants()
        .await
        .map_err(|e| anyhow::anyhow!("cannot list the tenants: {e}"))?;
    Ok(json!({
        "tenants": tenants.into_iter().map(TenantResponse::from).collect::<Vec<_>>(),
    }))
}

/// `tenants show`: one tenant and its live tokens per type.
///
/// # Errors
/// No such tenant, or the vault cannot be read.
pub async fn show(config: &Config, id: Uuid) -> anyhow::Result<Value> {
    let vault = open_vault(config).await?;
    let summary = vault
        .tenants
        .tenant_summary(id)
        .await
        .map_err(|e| match e {
            Error::NotFound => anyhow::anyhow!("no tenant {id}"),
            e => anyhow::anyhow!("cannot read tenant {id}: {e}"),
        })?;
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

/// Rows removed per statement while purging.
const PURGE_BATCH: u64 = 1000;

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
    let vault = open_vault(config).await?;
    vault.tenants.remove_tenant(id).await.map_err(|e| match e {
        Error::NotFound => anyhow::anyhow!("no tenant {id}"),
        e => anyhow::anyhow!("cannot delete tenant {id}: {e}"),
    })?;
    // The server's purge job would remove the rows too; the operator waits for it here, so
    // that the command is done when it answers, whether a server runs or not.
    let mut purged = 0u64;
    loop {
        // A pause between statements: a server running on the same SQLite file takes turns
        // at the one write lock with this.
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        match vault.tenants.purge_deleted_tenants(PURGE_BATCH).await {
            Ok(0) => break,
            Ok(n) => purged += n,
            Err(e) => anyhow::bail!("tenant {id} is deleted, but purging its rows failed: {e}"),
        }
    }
    Ok(json!({ "deleted": id, "rows_purged": purged }))
}
