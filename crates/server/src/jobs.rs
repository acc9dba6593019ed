//! The server's background jobs: the expiry sweep, the purge of deleted tenants, planner
//! statistics, and the activity and audit flushers, each stopping (after a last flush) when `stop` turns true.

use std::future::Future;
use std::time::Duration;

use tokenvault_domain::Vault;
use tokenvault_persistence::Database;
use tokio::sync::watch;

pub(crate) async fn sweep_expired(vault: Vault, every: Duration, mut stop: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                match vault.applications.purge_expired_applications().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(deleted = n, "expired applications deleted"),
                    Err(e) => tracing::warn!(error = %e, "application expiry sweep failed"),
                }
                match vault.tokens.purge_expired_tokens().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(deleted = n, "expired tokens deleted"),
                    Err(e) => tracing::warn!(error = %e, "token expiry sweep failed"),
                }
                match vault.sessions.purge_expired_sessions().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(deleted = n, "expired sessions deleted"),
                    Err(e) => tracing::warn!(error = %e, "session expiry sweep failed"),
                }
                match vault.idempotency.purge_idempotency().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(deleted = n, "expired idempotency records deleted"),
                    Err(e) => tracing::warn!(error = %e, "idempotency sweep failed"),
                }
            }
            _ = stop.changed() => break,
        }
    }
}

/// Rows of a deleted tenant removed per statement by [`purge_deleted_tenants`].
pub(crate) const PURGE_BATCH: u64 = 500;

/// The pause between two purge statements: on SQLite the writer thread and the pool take
/// turns at the one write lock, and a purge that never paused could keep it from the writer.
pub(crate) const PURGE_PAUSE: Duration = Duration::from_millis(5);

/// Rounds of the purge job between two checks of the cached data keys: each check looks up
/// the tenant of every key this instance holds, so it runs every 30 s, not every second.
const KEY_CHECK_ROUNDS: u64 = 30;

/// Removes the rows of deleted tenants (the second step of a tenant's deletion) in short
/// statements, checking for work once a second; stops between two statements. Every
/// [`KEY_CHECK_ROUNDS`] rounds it also drops the data keys of tenants deleted meanwhile.
pub(crate) async fn purge_deleted_tenants(vault: Vault, mut stop: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    let mut rounds = 0u64;
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.changed() => break,
        }
        let mut purged = 0u64;
        loop {
            match vault.tenants.purge_deleted_tenants(PURGE_BATCH).await {
                Ok(0) => break,
                Ok(n) => purged += n,
                Err(e) => {
                    tracing::warn!(error = %e, "purging a deleted tenant failed");
                    break;
                }
            }
            if *stop.borrow() {
                return;
            }
            tokio::time::sleep(PURGE_PAUSE).await;
        }
        if purged > 0 {
            tracing::info!(rows = purged, "deleted tenants' rows purged");
        }
        rounds += 1;
        if !rounds.is_multiple_of(KEY_CHECK_ROUNDS) {
            continue;
        }
        match vault.tenants.forget_deleted_tenant_keys().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                tenants = n,
                "data keys of deleted tenants dropped from memory"
            ),
            Err(e) => tracing::warn!(error = %e, "checking the cached data keys failed"),
        }
    }
}

/// On PostgreSQL, analyzes the tables that changed much since their last analysis every 10 s
/// (`analyze_changed_tables`): the planner's choices stay right where autovacuum is off or has
/// not come round yet. (On SQLite each round does nothing.)
pub(crate) async fn keep_statistics(db: Database, mut stop: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(Duration::from_secs(10));
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                match tokenvault_persistence::analyze_changed_tables(&db).await {
                    Ok(tables) if tables.is_empty() => {}
                    Ok(tables) => tracing::debug!(?tables, "planner statistics refreshed"),
                    Err(e) => tracing::warn!(error = %e, "refreshing planner statistics failed"),
                }
            }
            _ = stop.changed() => break,
        }
    }
}

/// Writes buffered token activity (monthly active tokens) once a second, and once more at stop.
pub(crate) async fn flush_activity(vault: Vault, mut stop: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                if let Err(e) = vault.usage.flush_activity().await {
                    tracing::warn!(error = %e, "activity flush failed");
                }
            }
            _ = stop.changed() => break,
        }
    }
    last_flush("activity", || vault.usage.flush_activity()).await;
}

/// How many times the last flush at stop is tried. A failed flush keeps its events, and the
/// pool may hand the last one a connection opened by an HTTP worker that has stopped (its
/// runtime gone, it fails once and is dropped): a second try gets another.
const FINAL_FLUSH_ATTEMPTS: u32 = 3;
/// The pause between two of those tries.
const FINAL_FLUSH_PAUSE: Duration = Duration::from_millis(100);
/// The longest the last flushes may hold up the stop (a database that is down).
const FINAL_FLUSH_DEADLINE: Duration = Duration::from_secs(30);

/// The last `what` flush at stop: up to [`FINAL_FLUSH_ATTEMPTS`] tries, [`FINAL_FLUSH_PAUSE`]
/// apart, within [`FINAL_FLUSH_DEADLINE`].
async fn last_flush<T, F: Future<Output = Result<T, tokenvault_domain::Error>>>(
    what: &str,
    flush: impl Fn() -> F,
) {
    let tries = async {
        for attempt in 1..=FINAL_FLUSH_ATTEMPTS {
            match flush().await {
                Ok(_) => return,
                Err(e) => tracing::warn!(error = %e, attempt, what, "final flush failed"),
            }
            tokio::time::sleep(FINAL_FLUSH_PAUSE).await;
        }
    };
    if tokio::time::timeout(FINAL_FLUSH_DEADLINE, tries)
        .await
        .is_err()
    {
        tracing::warn!(
            what,
            "the final flush did not finish in time; its events are lost"
        );
    }
}

/// Appends buffered audit events to their tenants' chains every 200 ms, or as soon as
/// [`AUDIT_BATCH`] are waiting, and once more at stop (a crash loses at most the last 200 ms of
/// entries).
pub(crate) async fn flush_audit(vault: Vault, mut stop: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(AUDIT_POLL);
    let mut last = tokio::time::Instant::now();
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                if last.elapsed() < AUDIT_EVERY && vault.audit.audit_backlog() < AUDIT_BATCH {
                    continue;
                }
                last = tokio::time::Instant::now();
                if let Err(e) = vault.audit.flush_audit().await {
                    tracing::warn!(error = %e, "audit flush failed");
                }
            }
            _ = stop.changed() => break,
        }
    }
    last_flush("audit", || vault.audit.flush_audit()).await;
}

/// The longest an audit event waits in memory before its flush starts.
const AUDIT_EVERY: Duration = Duration::from_millis(200);
/// A backlog that is flushed at once: on SQLite a flush holds the one write lock for its whole
/// transaction, so bounding its size bounds how long token inserts wait behind it (the p99 of
/// `POST /tokens`, docs/performance-journal.md).
const AUDIT_BATCH: usize = 128;
/// How often the backlog is looked at.
const AUDIT_POLL: Duration = Duration::from_millis(10);
