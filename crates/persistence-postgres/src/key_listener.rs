//! The thread that keeps the key memory (`key_cache.rs`) true: it listens on [`CHANNEL`] over
//! a connection of its own and forgets everything on each notice. The memory is used only
//! while it listens, and only once a probe — a notice it sends itself from another session —
//! has reached it: behind a pooler in transaction mode, `LISTEN` answers and no notice ever
//! comes. Its session is named [`LISTENER_NAME`] from then on, and it probes again every
//! [`PROBE_EVERY`]: an idle connection dropped without a reset would otherwise leave it
//! waiting for ever, the memory in use.

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

/// How often, once listening, it proves again that notices reach it.
const PROBE_EVERY: Duration = Duration::from_secs(30);

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
    /// `LISTEN` is in force and its probe has come.
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

/// Why the listener is not to be trusted (yet).
enum NotReady {
    /// Its probe did not come within [`PROBE_WITHIN`]: notices do not reach it.
    Missed(String),
    /// Its connection, or the probe's, failed.
    Failed(String),
}

/// Whether `listener`, whose `LISTEN` answered, hears changes: proven by a notice sent from
/// another session, as another instance's change would be ([`probe`]); then its session takes
/// the name [`LISTENER_NAME`].
async fn ready(options: &PgConnectOptions, listener: &mut PgListener) -> Result<(), NotReady> {
    // Nothing is kept yet: another notice has nothing to forget.
    probe(options, listener, &|| {}).await?;
    supervise::within(
        sea_orm::sqlx::query("SELECT set_config('application_name', $1, false)")
            .bind(LISTENER_NAME)
            .execute(listener),
    )
    .await
    .map(|_| ())
    .map_err(|e| NotReady::Failed(e.to_string()))
}

/// Sends `nonce` on [`CHANNEL`] from a session of its own.
async fn send_probe(options: &PgConnectOptions, nonce: &str) -> Result<(), String> {
    let options = options.clone().application_name(PROBE_NAME);
    let mut sender = supervise::within(PgConnection::connect_with(&options))
        .await
        .map_err(|e| e.to_string())?;
    let sent = supervise::within(
        sea_orm::sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(nonce)
            .execute(&mut sender),
    )
    .await;
    // Closed politely within the deadline, or dropped (its socket closed) after it.
    let _ = supervise::within(sender.close()).await;
    sent.map(|_| ()).map_err(|e| e.to_string())
}

/// Sends a probe ([`send_probe`]) and waits, at most [`PROBE_WITHIN`], until `listener` hears
/// it; `on_other` is called for every other notice meanwhile (a change: forget).
async fn probe(
    options: &PgConnectOptions,
    listener: &mut PgListener,
    on_other: &dyn Fn(),
) -> Result<(), NotReady> {
    let nonce = Uuid::new_v4().to_string();
    send_probe(options, &nonce)
        .await
        .map_err(NotReady::Failed)?;
    let heard = async {
        loop {
            match listener.try_recv().await {
                Ok(Some(notice)) if notice.payload() == nonce => return Ok(()),
                Ok(Some(_)) => on_other(),
                Ok(None) => return Err(NotReady::Failed("the connection was lost".into())),
                Err(e) => return Err(NotReady::Failed(e.to_string())),
            }
        }
    };
    tokio::time::timeout(PROBE_WITHIN, heard)
        .await
        .unwrap_or_else(|_| {
            Err(NotReady::Missed(format!(
                "no notice within {PROBE_WITHIN:?}"
            )))
        })
}

/// Hears `listener` until `stop` (`true`) or until it cannot be trusted (`false`): forgets
/// everything on each notice, and proves again `every` ([`PROBE_EVERY`]) that notices reach it —
/// an idle connection dropped without a reset (a NAT, a failover) would leave it waiting for
/// ever with the memory in use.
async fn hear(
    options: &PgConnectOptions,
    listener: &mut PgListener,
    cache: &KeyCache,
    stop: &Notify,
    every: Duration,
) -> bool {
    let forget = || cache.forget();
    let mut next_probe = tokio::time::Instant::now() + every;
    loop {
        let heard = tokio::select! {
            biased;
            () = stop.notified() => return true,
            () = tokio::time::sleep_until(next_probe) => None,
            heard = listener.try_recv() => Some(heard),
        };
        let failed = match heard {
            None => {
                let probed = tokio::select! {
                    biased;
                    () = stop.notified() => return true,
                    probed = probe(options, listener, &forget) => probed,
                };
                next_probe = tokio::time::Instant::now() + every;
                match probed {
                    Ok(()) => continue,
                    Err(NotReady::Missed(why) | NotReady::Failed(why)) => why,
                }
            }
            Some(Ok(Some(_))) => {
                forget();
                continue;
            }
            Some(Ok(None)) => "the connection was lost".to_string(),
            Some(Err(e)) => e.to_string(),
        };
        tracing::warn!(error = %failed, "the key-change listener cannot be trusted; keys are read from the database until it is back");
        return false;
    }
}

/// Listens until `stop`: uses the memory while [`hear`] can, and connects again (after
/// [`RETRY_AFTER`], or [`PROBE_RETRY_AFTER`] when its probe never came) when it cannot.
async fn listen(options: &PgConnectOptions, cache: &KeyCache, stop: &Notify) {
    let _deaf = Deaf(cache);
    loop {
        let connected = tokio::select! {
            biased;
            () = stop.notified() => return,
            connected = connect(options) => connected,
        };
        let mut retry_after = RETRY_AFTER;
        match connected {
            Ok(mut listener) => {
                let ready = tokio::select! {
                    biased;
                    () = stop.notified() => return,
                    ready = ready(options, &mut listener) => ready,
                };
                match ready {
                    Ok(()) => {
                        cache.listening(true);
                        let stopped = hear(options, &mut listener, cache, stop, PROBE_EVERY).await;
                        cache.listening(false);
                        if stopped {
                            return;
                        }
                    }
                    Err(NotReady::Missed(why)) => {
                        tracing::warn!(error = %why, "the key-change listener does not hear its own notices (a pooler in transaction mode?); keys are read from the database");
                        retry_after = PROBE_RETRY_AFTER;
                    }
                    Err(NotReady::Failed(why)) => {
                        tracing::warn!(error = %why, "the key-change listener failed; keys are read from the database until it is back");
                    }
                }
                // Not held through the wait: no session idles, a connection slot taken.
                drop(listener);
            }
            Err(e) => {
                tracing::warn!(error = %e, "the key-change listener cannot connect; keys are read from the database until it can");
            }
        }
        tokio::select! {
            biased;
            () = stop.notified() => return,
            () = tokio::time::sleep(retry_after) => {}
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
        assert!(probe(&options, &mut listener, &|| {}).await.is_ok());
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .connect_lazy_with(options.clone());
        let mut elsewhere = PgListener::connect_with(&pool).await.unwrap();
        elsewhere.listen("tokenvault_keys_elsewhere").await.unwrap();
        let missed = probe(&options, &mut elsewhere, &|| {}).await;
        assert!(matches!(missed, Err(NotReady::Missed(_))));

        // Once listening, it probes again: a listener that hears its probes goes on (and
        // forgets on any other notice) until stopped; one that does not gives up.
        let cache = KeyCache::default();
        cache.listening(true);
        let stop = Notify::new();
        let every = Duration::from_millis(100);
        let before = cache.generation();
        let (stopped, ()) =
            tokio::join!(hear(&options, &mut listener, &cache, &stop, every), async {
                tokio::time::sleep(Duration::from_millis(500)).await;
                send_probe(&options, "a change").await.unwrap();
                tokio::time::sleep(Duration::from_millis(500)).await;
                stop.notify_one();
            });
        assert!(
            stopped,
            "a listener that hears its probes is stopped, not given up"
        );
        assert_ne!(cache.generation(), before, "a notice forgot the memory");
        let started = std::time::Instant::now();
        assert!(!hear(&options, &mut elsewhere, &cache, &stop, every).await);
        assert!(
            started.elapsed() >= PROBE_WITHIN,
            "gave up only once its probe was late"
        );
    }
}
