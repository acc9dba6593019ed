//! `tokenvault-bench ceilings`: what the layers under the HTTP API reach on this machine, for
//! `cargo xtask bench` to set each endpoint beside. Writes and reads one token row through the
//! persistence adapter (no HTTP, no authentication) from `concurrency` tasks at once, and
//! encrypts and decrypts a token value with the tenant cipher on one thread. [`fill`] adds
//! tokens to a tenant through the adapter, for measuring the API at scale.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokenvault_crypto::EnvelopeCipher;
use tokenvault_domain::ports::{
    Cipher, Clock, TenantKeys, TenantRepository, TokenRepository, TokenWrite,
};
use tokenvault_domain::search_index::data_term_input;
use tokenvault_domain::token::{StoredToken, data_context};
use tokenvault_persistence::{SeaOrmTenantRepository, SeaOrmTokenRepository};
use uuid::Uuid;

use crate::{Config, SystemClock, current_master_key, open_vault, previous_master_keys};

/// Operations per second of each ceiling.
#[derive(Debug, serde::Serialize)]
pub struct Ceilings {
    /// Token rows inserted per second through the adapter (`concurrency` writers).
    pub insert_per_s: f64,
    /// Reads of one token row per second through the adapter (`concurrency` readers).
    pub read_per_s: f64,
    /// AES-256-GCM encrypt + decrypt pairs of a 64-byte value per second, one thread.
    pub encrypt_decrypt_per_s: f64,
}

/// A token row as `POST /tokens` stores one: ciphertext of a short value, a fingerprint.
fn row(cipher: &EnvelopeCipher, tenant_id: Uuid, id: String) -> anyhow::Result<StoredToken> {
    let data = cipher.encrypt(tenant_id, id.as_bytes(), br#""bench value""#)?;
    Ok(StoredToken {
        fingerprint: Some(format!("fp-{id}")),
        id,
        tenant_id,
        token_type: "token".into(),
        container: "/".into(),
        metadata: BTreeMap::new(),
        data,
        mask: None,
        dedup_key: None,
        fingerprint_expression: None,
        created_by: None,
        created_at: SystemClock.now(),
        modified_by: None,
        modified_at: None,
        expires_at: None,
        deduplicate: None,
        search_indexes: Vec::new(),
        search_terms: Vec::new(),
        version: 0,
    })
}

fn per_second(n: u64, since: Instant) -> f64 {
    f64::from(u32::try_from(n).unwrap_or(u32::MAX)) / since.elapsed().as_secs_f64()
}

/// Runs `concurrency` copies of `op` until `duration` has passed; operations per second.
async fn rate<F, Fut>(duration: Duration, concurrency: usize, op: F) -> anyhow::Result<f64>
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let op = Arc::new(op);
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..concurrency.max(1) {
        let (op, done, stop) = (op.clone(), done.clone(), stop.clone());
        tasks.spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                op(done.fetch_add(1, Ordering::Relaxed)).await?;
                // An operation may complete without yielding (SQLite's point reads run on the
                // calling thread): let the timer, and the other tasks, run.
                tokio::task::yield_now().await;
            }
            anyhow::Ok(())
        });
    }
    tokio::time::sleep(duration).await;
    stop.store(true, Ordering::Relaxed);
    for result in tasks.join_all().await {
        result?;
    }
    let n = done.load(Ordering::Relaxed);
    Ok(per_second(n, started))
}

/// The name of the tenant `ceilings` adds.
pub const TENANT_NAME: &str = "ceilings";

/// Measures the ceilings on the configured database (use a fresh one: it adds a tenant and
/// its rows). Refuses a database that holds tenants other than those it added before, unless
/// `allow_other_tenants`: measuring there would add a tenant, rows and load to a vault in use.
pub async fn measure(
    config: &Config,
    duration: Duration,
    concurrency: usize,
    allow_other_tenants: bool,
) -> anyhow::Result<Ceilings> {
    let vault = open_vault(config).await?;
    if !allow_other_tenants {
        refuse_other_tenants(config).await?;
    }
    let tenant = vault
        .tenants
        .provision_tenant(TENANT_NAME, None, None)
        .await
        .map_err(|e| anyhow::anyhow!("cannot create the tenant: {e}"))?
        .tenant
        .id;
    let cipher = EnvelopeCipher::new(current_master_key(config)?, previous_master_keys(config)?);
    let wrapped = cipher.new_tenant_key(tenant).await?;
    cipher.load_tenant_key(tenant, &wrapped).await?;
    let cipher = Arc::new(cipher);
    let options = config.db_options(config.database.max_connections, false);
    let db = tokenvault_persistence::connect(&config.effective_database_url(), options).await?;
    let tokens = Arc::new(SeaOrmTokenRepository::new(db.clone()));

    let (repo, c) = (tokens.clone(), cipher.clone());
    let insert_per_s = rate(duration, concurrency, move |n| {
        let (repo, c) = (repo.clone(), c.clone());
        async move {
            let token = row(&c, tenant, format!("ceiling-{n}"))?;
            match repo.insert(&token).await? {
                TokenWrite::Done => Ok(()),
                other => anyhow::bail!("insert: {other:?}"),
            }
        }
    })
    .await?;

    let repo = tokens.clone();
    let read_per_s = rate(duration, concurrency, move |_| {
        let repo = repo.clone();
        async move {
            repo.get(tenant, "ceiling-0", SystemClock.now())
                .await?
                .ok_or_else(|| anyhow::anyhow!("the row is missing"))?;
            Ok(())
        }
    })
    .await?;

    let started = Instant::now();
    let mut pairs = 0u64;
    let value = [7u8; 64];
    while started.elapsed() < duration {
        for _ in 0..1000 {
            let sealed = cipher.encrypt(tenant, b"context", &value)?;
            let opened = cipher.decrypt(tenant, b"context", &sealed)?;
            anyhow::ensure!(opened == value, "decrypt changed the value");
        }
        pairs += 1000;
    }
    let encrypt_decrypt_per_s = per_second(pairs, started);
    db.close().await?;
    vault.close().await?;
    Ok(Ceilings {
        insert_per_s,
        read_per_s,
        encrypt_decrypt_per_s,
    })
}

/// Fails when the configured database holds a tenant not named [`TENANT_NAME`].
async fn refuse_other_tenants(config: &Config) -> anyhow::Result<()> {
    let options = config.db_options(1, false);
    let db = tokenvault_persistence::connect(&config.effective_database_url(), options).await?;
    let tenants = SeaOrmTenantRepository::new(db.clone());
    let mut others = 0_usize;
    for (id, _) in tenants.data_keys().await? {
        if tenants
            .get(id)
            .await?
            .is_some_and(|tenant| tenant.name != TENANT_NAME)
        {
            others += 1;
        }
    }
    db.close().await?;
    anyhow::ensure!(
        others == 0,
        "the database holds {others} tenant(s) besides those `ceilings` added: it measures on a \
         fresh database, adding a tenant and rows; give --allow-other-tenants to measure here \
         anyway"
    );
    Ok(())
}

/// Adds `count` tokens to `tenant` through the persistence adapter, in transactions of a
/// thousand rows, as `POST /tokens` would store them (type `token`, container `/`, data
/// encrypted under the tenant's key), created a year before now so that they sort after
/// everything the API created. Returns how many were added.
pub async fn fill(config: &Config, tenant: Uuid, count: u64) -> anyhow::Result<u64> {
    let options = config.db_options(config.database.max_connections, false);
    let db = tokenvault_persistence::connect(&config.effective_database_url(), options).await?;
    let wrapped = SeaOrmTenantRepository::new(db.clone())
        .data_key(tenant)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no tenant {tenant} with a data key"))?;
    let cipher = EnvelopeCipher::new(current_master_key(config)?, previous_master_keys(config)?);
    cipher.load_tenant_key(tenant, &wrapped).await?;
    let tokens = SeaOrmTokenRepository::new(db.clone());
    let start = SystemClock.now() - time::Duration::days(365);
    let mut added = 0u64;
    while added < count {
        let batch: Vec<StoredToken> = (added..count.min(added + 1000))
            .map(|n| {
                let id = Uuid::new_v4().to_string();
                let data = cipher.encrypt(
                    tenant,
                    &data_context(tenant, &id, "data"),
                    format!("\"filler {n}\"").as_bytes(),
                )?;
                let micros = i64::try_from(n).unwrap_or(i64::MAX);
                // One search index each, as `{{ data }}` would make it: the term index holds
                // a row (SQLite) or an entry (PostgreSQL) for every filler token.
                let term = cipher.search_term(tenant, &data_term_input(&format!("filler {n}")))?;
                Ok(StoredToken {
                    created_at: start + time::Duration::microseconds(micros),
                    data,
                    search_indexes: vec!["{{ data }}".into()],
                    search_terms: vec![term],
                    ..row(&cipher, tenant, id)?
                })
            })
            .collect::<anyhow::Result<_>>()?;
        match tokens.insert_all(&batch).await? {
            TokenWrite::Done => added += batch.len() as u64,
            other => anyhow::bail!("fill: {other:?}"),
        }
    }
    // What a bulk load is followed by on PostgreSQL (its autovacuum would do it later, or
    // never where it is off): fresh statistics, so plans are made for the table's new size.
    tokenvault_persistence::refresh_statistics(&db).await?;
    db.close().await?;
    Ok(added)
}
