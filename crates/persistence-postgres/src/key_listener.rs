//! The thread that keeps the key memory (`key_cache.rs`) true: it listens on [`CHANNEL`] over
//! a connection of its own and forgets everything on each notice. The memory is used only
//! while it listens, and only once a probe — a notice it sends itself from another session —
//! has reached it: behind a pooler in transaction mode, `LISTEN` answers and no notice ever
//! comes. Its session is named [`LISTENER_NAME`] from then on.

use std::sync::Arc;
use std::time::Duration;

use sea_orm::sqlx::Connection;
use sea_orm::sqlx::postgres::{PgConnectOptions, PgConnection, PgListener, PgPoolOptions};
use tokio::sync::Notify;
use uuid::Uuid;

use crate::key_cache::KeyCache;
use crate::supervise::{self, Supervised};

/// The listener's `application_name` once its probe has come (the memory is in use from then
/// on), by which an administrator (or a test) finds its session.
pub(crate) const LISTENER_NAME: &str = "tokenvault-keys";

/// Its `application_name` until then.
const STARTING_NAME: &str = "tokenvault-keys-starting";

/// The `application_name` of the session that sends the listener's probe.
const PROBE_NAME: &str = "tokenvault-keys-probe";

/// How long the listener waits before connecting again after a failure.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// How long the listener waits for its probe (a notice of its own, sent from another session)
/// before it concludes that notices do not reach it.
const PROBE_WITHIN: Duration = Duration::from_secs(5);

/// How long it waits before trying again when its probe never came: a pooler in transaction
/// mode answers `LISTEN` and passes no notice on, and will not start to.
const PROBE_RETRY_AFTER: Duration = Duration::from_mins(1);

/// The channel migration 19's trigger notifies.
pub(crate) const CHANNEL: &str = "tokenvault_keys";

/// The memory and the thread that listens for its notices.
#[derive(Debug)]
pub(crate) struct KeyMemory {
    cache: Arc<KeyCache>,
    thread: Supervised,
}

impl KeyMemory {
    /// Starts the listening thread, which connects with `options`; nothing is kept until its
    /// `LISTEN` is in force.
    pub(crate) fn start(options: PgConnectOptions) -> std::io::Result<Self> {
        let cache = Arc::new(KeyCache::default());
        let options = options.application_name(STARTING_NAME);
        let heard = cache.clone();
        let thread = supervise::spawn("pg-keys", move |rt, stop| {
            rt.block_on(listen(&options, &heard, stop));
        })?;
        Ok(Self { cache, thread })
    }

    /// The memory.
    pub(crate) fn cache(&self) -> &Arc<KeyCache> {
        &self.cache
    }

    /// Stops the thread; from then on every key is read from the database.
    pub(crate) async fn stop(&self, until: tokio::time::Instant) {
        self.thread.stop(until).await;
        self.cache.listening(false);
    }
}

/// Marks the memory as not listening when the listening loop ends, however it ends (a panic,
/// the runtime dropping it, a stop).
struct Deaf<'a>(&'a KeyCache);

impl Drop for Deaf<'_> {
    fn drop(&mut self) {
        self.0.listening(false);
    }
}

/// A listener on [`CHANNEL`] over a connection of its own.
async fn connect(options: &PgConnectOptions) -> Result<PgListener, sea_orm::sqlx::Error> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .min_connections(0)
        .idle_timeout(None)
        .max_lifetime(None)
        .test_before_acquire(false)
        .connect_lazy_with(options.clone());
    let mut listener = supervise::within(PgListener::connect_with(&pool)).await?;
    supervise::within(listener.listen(CHANNEL)).await?;
    Ok(listener)
}

/// Whether `listener`, whose `LISTEN` answered, hears changes: proven by a notice sent from
/// another session, as another instance's change would be ([`probe`]); then its session takes
/// the name [`LISTENER_NAME`].
async fn ready(options: &PgConnectOptions, listener: &mut PgListener) -> Result<(), String> {
    probe(options, listener).await?;
    supervise::within(
        sea_orm::sqlx::query("SELECT set_config('application_name', $1, false)")
            .bind(LISTENER_NAME)
            .execute(listener),
    )
    .await
    .map(|_| ())
    .map_err(|e| e.to_string())
}

/// Sends a notice on [`CHANNEL`] from a session of its own and waits, at most
/// [`PROBE_WITHIN`], until `listener` hears it; `Err` says why not.
async fn probe(options: &PgConnectOptions, listener: &mut PgListener) -> Result<(), String> {
    let nonce = Uuid::new_v4().to_string();
    let options = options.clone().application_name(PROBE_NAME);
    let mut sender = supervise::within(PgConnection::connect_with(&options))
        .await
        .map_err(|e| e.to_string())?;
    let sent = supervise::within(
        sea_orm::sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(&nonce)
            .execute(&mut sender),
    )
    .await;
    let _ = sender.close().await;
    sent.map_err(|e| e.to_string())?;
    let heard = async {
        loop {
            match listener.try_recv().await {
                Ok(Some(notice)) if notice.payload() == nonce => return Ok(()),
                // Another notice (a change while probing): nothing is kept yet to forget.
                Ok(Some(_)) => {}
                Ok(None) => return Err("the connection was lost".to_string()),
                Err(e) => return Err(e.to_string()),
            }
        }
    };
    tokio::time::timeout(PROBE_WITHIN, heard)
        .await
        .unwrap_or_else(|_| Err(format!("no notice within {PROBE_WITHIN:?}")))
}

/// Listens until `stop`: forgets everything on each notice, and connects again (after
/// [`RETRY_AFTER`]) when the connection is lost.
async fn listen(options: &PgConnectOptions, cache: &KeyCache, stop: &Notify) {
    let _deaf = Deaf(cache);
    loop {
        let connected = tokio::select! {
            biased;
            () = stop.notified() => return,
            connected = connect(options) => connected,
        };
        match connected {
            Ok(mut listener) => {
                let ready = tokio::select! {
                    biased;
                    () = stop.notified() => return,
                    ready = ready(options, &mut listener) => ready,
                };
                if let Err(why) = ready {
                    tracing::warn!(error = %why, "the key-change listener is not sure to hear changes; keys are read from the database");
                    tokio::select! {
                        biased;
                        () = stop.notified() => return,
                        () = tokio::time::sleep(PROBE_RETRY_AFTER) => {}
                    }
                    continue;
                }
                cache.listening(true);
                loop {
                    let heard = tokio::select! {
                        biased;
                        () = stop.notified() => return,
                        heard = listener.try_recv() => heard,
                    };
                    match heard {
                        Ok(Some(_)) => cache.forget(),
                        Ok(None) => {
                            tracing::warn!(
                                "the key-change listener lost its connection; keys are read from the database until it is back"
                            );
                            break;
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "the key-change listener failed; keys are read from the database until it is back");
                            break;
                        }
                    }
                }
                cache.listening(false);
            }
            Err(e) => {
                tracing::warn!(error = %e, "the key-change listener cannot connect; keys are read from the database until it can");
            }
        }
        tokio::select! {
            biased;
            () = stop.notified() => return,
            () = tokio::time::sleep(RETRY_AFTER) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe is heard by a listener on the channel, and not by one that hears nothing of
    /// it (as behind a pooler that passes no notice on). PostgreSQL only.
    #[tokio::test]
    async fn the_probe_proves_that_notices_arrive() {
        let Ok(url) = std::env::var("TOKENVAULT_TEST_DATABASE_URL") else {
            return;
        };
        let options: PgConnectOptions = url.parse().unwrap();
        let mut listener = connect(&options).await.unwrap();
        probe(&options, &mut listener).await.unwrap();
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .connect_lazy_with(options.clone());
        let mut elsewhere = PgListener::connect_with(&pool).await.unwrap();
        elsewhere.listen("tokenvault_keys_elsewhere").await.unwrap();
        let missed = probe(&options, &mut elsewhere).await;
        assert!(
            missed
                .as_ref()
                .is_err_and(|why| why.starts_with("no notice")),
            "{missed:?}"
        );
    }
}
