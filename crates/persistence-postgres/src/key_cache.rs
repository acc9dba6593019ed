//! The applications of the keys this server has seen, and the reactors (with their formulas)
//! it has run, kept in memory on PostgreSQL: a request whose key is read alone (a tokenize,
//! every management call) costs no round trip for it, and a `GET /tokens/{id}` or a react
//! only its token's, in the grouped reads of `key_group.rs`. Profiles put a fifth of the machine in the
//! tokenize's key read and in the react's five-table statement (docs/performance-journal.md).
//!
//! What keeps it true (docs/persistence.md, "Keys in memory"):
//! - **Every change is heard**: a trigger on `applications`, `tenants`, `reactors` and
//!   `reactor_formulas` (migration 19) sends a notice when a transaction that updated, deleted
//!   or truncated a row of one commits, whoever made it; the listening thread
//!   (`key_listener.rs`) forgets everything on each notice. This
//!   server's own changes forget at once as well ([`KeyCache::forget`] from
//!   `Backend::keys_changed`), before their response is sent.
//! - **Nothing is kept while not listening**: before the listener's `LISTEN` has run and a
//!   probe (a notice sent from another session) has reached it — behind a pooler in
//!   transaction mode, `LISTEN` answers and no notice comes — after its connection is lost and
//!   until it is back (everything is forgotten again then), and after the thread ends, every
//!   read goes to the database.
//! - **A read that raced a change is not kept**: a read records the [`generation`] before it
//!   starts and its answer is kept only if no notice came in between.
//! - **Bounded**: an entry is read again after [`KEPT_FOR`] even if no notice came (a notice
//!   lost on the way, a pooler that does not pass notices on), at most [`MOST`] entries of
//!   each kind, and only what exists: an unknown key is read from the database every time.
//! - **Nothing is trusted for its tenant**: a reactor is kept by its id alone, and whoever
//!   reads it checks it is the key's tenant's (`confined` in the shared `applications.rs`), as
//!   for any read ahead.
//!
//! Not on Citus (its reference tables are not watched): there every key is read.
//!
//! [`generation`]: KeyCache::generation

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokenvault_domain::application::Application;
use tokenvault_domain::formula::Formula;
use tokenvault_domain::reactor::Reactor;
use tokenvault_domain::tenant::TenantSettings;
use uuid::Uuid;

/// The longest an entry is used without being read again.
pub(crate) const KEPT_FOR: Duration = Duration::from_secs(10);

/// The most entries kept; a full memory starts again empty.
pub(crate) const MOST: usize = 10_000;

/// The most bytes of formula code and reactor configuration kept, all reactors together: a
/// tenant's many reactors over large formulas must not grow every instance's memory (attack
/// review). A full memory of reactors starts again empty; a reactor larger than a tenth of it
/// is never kept.
pub(crate) const MOST_REACTOR_BYTES: usize = 32 << 20;

/// A key's application and its tenant's settings.
pub(crate) type KeyEntry = (Application, TenantSettings);

/// A reactor and its formula (`None`: missing).
pub(crate) type ReactorEntry = (Reactor, Option<Formula>);

/// What was read at `read_at`.
struct Held<T> {
    read_at: Instant,
    value: T,
}

/// What the memory holds, and the count of notices (and other forgettings) so far.
#[derive(Default)]
struct Entries {
    by_key: HashMap<String, Held<KeyEntry>>,
    reactors: HashMap<Uuid, Held<ReactorEntry>>,
    /// What the kept reactors weigh ([`weight`]).
    reactor_bytes: usize,
    generation: u64,
}

/// What a forgetting took out of the memory: dropped once its lock is released, so that no
/// read waits while up to [`MOST`] applications and [`MOST_REACTOR_BYTES`] of formulas are
/// freed.
type Forgotten = (
    HashMap<String, Held<KeyEntry>>,
    HashMap<Uuid, Held<ReactorEntry>>,
);

impl Entries {
    #[must_use = "drop what was forgotten once the lock is released"]
    fn clear(&mut self) -> Forgotten {
        self.reactor_bytes = 0;
        self.generation += 1;
        (
            std::mem::take(&mut self.by_key),
            std::mem::take(&mut self.reactors),
        )
    }
}

/// What a reactor weighs in memory, roughly: its formula's code and its configuration.
fn weight((reactor, formula): &ReactorEntry) -> usize {
    let configuration: usize = reactor
        .configuration
        .iter()
        .map(|(name, value)| name.len() + value.to_string().len())
        .sum();
    configuration + formula.as_ref().map_or(0, |f| f.code.len()) + 512
}

/// `map[id]` if it was read less than [`KEPT_FOR`] before `now`.
fn fresh<K: std::hash::Hash + Eq + ?Sized, Q, T: Clone>(
    map: &HashMap<Q, Held<T>>,
    id: &K,
    now: Instant,
) -> Option<T>
where
    Q: std::borrow::Borrow<K> + std::hash::Hash + Eq,
{
    let held = map.get(id)?;
    (now.saturating_duration_since(held.read_at) < KEPT_FOR).then(|| held.value.clone())
}

/// Keeps `value` under `id` in `map`, which starts again empty when full.
fn keep<Q: std::hash::Hash + Eq, T>(
    map: &mut HashMap<Q, Held<T>>,
    id: Q,
    read_at: Instant,
    value: T,
) {
    if map.len() >= MOST {
        map.clear();
    }
    map.insert(id, Held { read_at, value });
}

/// The applications of the keys seen, by key hash (hex).
#[derive(Default)]
pub(crate) struct KeyCache {
    entries: Mutex<Entries>,
    /// The listener's `LISTEN` is in force.
    listening: AtomicBool,
}

impl std::fmt::Debug for KeyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyCache")
            .field("listening", &self.listening.load(Ordering::Acquire))
            .finish_non_exhaustive()
    }
}

impl KeyCache {
    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The application of `key_hash` if it was read less than [`KEPT_FOR`] before `now` and
    /// nothing changed since.
    pub(crate) fn get(&self, key_hash: &str, now: Instant) -> Option<KeyEntry> {
        if !self.listening.load(Ordering::Acquire) {
            return None;
        }
        fresh(&self.entries().by_key, key_hash, now)
    }

    /// The reactor `id` and its formula, as [`Self::get`] answers a key.
    pub(crate) fn reactor(&self, id: Uuid, now: Instant) -> Option<ReactorEntry> {
        if !self.listening.load(Ordering::Acquire) {
            return None;
        }
        fresh(&self.entries().reactors, &id, now)
    }

    /// Where the memory stands before a read: give it to [`Self::put`] with the answer.
    /// `None` while not listening: then nothing read is kept.
    pub(crate) fn generation(&self) -> Option<u64> {
        let entries = self.entries();
        self.listening
            .load(Ordering::Acquire)
            .then_some(entries.generation)
    }

    /// Keeps what a read that began at `generation`, at `read_at`, answered for `key_hash`,
    /// unless something was forgotten since.
    pub(crate) fn put(&self, key_hash: String, generation: u64, read_at: Instant, value: KeyEntry) {
        let mut entries = self.entries();
        if entries.generation == generation && self.listening.load(Ordering::Acquire) {
            keep(&mut entries.by_key, key_hash, read_at, value);
        }
    }

    /// Keeps a reactor as [`Self::put`] keeps a key.
    pub(crate) fn put_reactor(
        &self,
        id: Uuid,
        generation: u64,
        read_at: Instant,
        value: ReactorEntry,
    ) {
        let size = weight(&value);
        if size > MOST_REACTOR_BYTES / 10 {
            return;
        }
        let mut guard = self.entries();
        let entries = &mut *guard;
        if entries.generation != generation || !self.listening.load(Ordering::Acquire) {
            return;
        }
        if let Some(old) = entries.reactors.remove(&id) {
            entries.reactor_bytes = entries.reactor_bytes.saturating_sub(weight(&old.value));
        }
        if entries.reactors.len() >= MOST || entries.reactor_bytes + size > MOST_REACTOR_BYTES {
            entries.reactors.clear();
            entries.reactor_bytes = 0;
        }
        entries.reactor_bytes += size;
        entries.reactors.insert(id, Held { read_at, value });
    }

    /// Forgets every entry, and every read under way.
    pub(crate) fn forget(&self) {
        let forgotten = self.entries().clear();
        drop(forgotten);
    }

    /// The listener hears changes (`key_listener.rs`), or no longer: either way what was kept
    /// may have missed a notice, and is forgotten.
    pub(crate) fn listening(&self, listening: bool) {
        let forgotten = {
            let mut entries = self.entries();
            self.listening.store(listening, Ordering::Release);
            entries.clear()
        };
        drop(forgotten);
    }
}

#[cfg(test)]
mod tests {
    use time::OffsetDateTime;
    use tokenvault_domain::permission::ApplicationType;
    use uuid::Uuid;

    use super::*;

    fn app(name: &str) -> (Application, TenantSettings) {
        let application = Application {
            id: Uuid::nil(),
            tenant_id: Uuid::nil(),
            name: name.into(),
            app_type: ApplicationType::Private,
            permissions: Vec::new(),
            rules: Vec::new(),
            created_by: None,
            created_at: OffsetDateTime::UNIX_EPOCH,
            modified_by: None,
            modified_at: None,
            expires_at: None,
        };
        (application, TenantSettings::default())
    }

    fn listening() -> KeyCache {
        let cache = KeyCache::default();
        cache.listening(true);
        cache
    }

    #[test]
    fn nothing_is_kept_while_not_listening() {
        let cache = KeyCache::default();
        assert_eq!(cache.generation(), None);
        let now = Instant::now();
        cache.put("k".into(), 0, now, app("a"));
        assert!(cache.get("k", now).is_none());
        let cache = listening();
        let seen = cache.generation().unwrap();
        cache.put("k".into(), seen, now, app("a"));
        assert_eq!(cache.get("k", now).unwrap().0.name, "a");
        // The connection lost: what was kept is neither used nor kept again.
        cache.listening(false);
        assert!(cache.get("k", now).is_none());
        cache.listening(true);
        assert!(cache.get("k", now).is_none(), "forgotten on the way back");
    }

    #[test]
    fn a_read_that_raced_a_notice_is_not_kept() {
        let cache = listening();
        let now = Instant::now();
        let seen = cache.generation().unwrap();
        cache.forget();
        cache.put("k".into(), seen, now, app("old"));
        assert!(cache.get("k", now).is_none());
        let seen = cache.generation().unwrap();
        cache.put("k".into(), seen, now, app("new"));
        assert_eq!(cache.get("k", now).unwrap().0.name, "new");
        cache.forget();
        assert!(cache.get("k", now).is_none());
    }

    fn reactor_with_code(code_len: usize) -> ReactorEntry {
        let (app, _) = app("a");
        let reactor = Reactor {
            id: Uuid::now_v7(),
            tenant_id: app.tenant_id,
            name: "r".into(),
            formula_id: Uuid::nil(),
            configuration: serde_json::Map::new(),
            application_id: None,
            created_by: None,
            created_at: OffsetDateTime::UNIX_EPOCH,
            modified_by: None,
            modified_at: None,
        };
        let formula = Formula {
            id: Uuid::nil(),
            tenant_id: app.tenant_id,
            name: "f".into(),
            description: None,
            formula_type: "private".into(),
            code: "x".repeat(code_len),
            configuration: vec![],
            request_parameters: vec![],
            created_by: None,
            created_at: OffsetDateTime::UNIX_EPOCH,
            modified_by: None,
            modified_at: None,
            status: None,
        };
        (reactor, Some(formula))
    }

    #[test]
    fn reactors_are_bounded_by_what_they_weigh() {
        let cache = listening();
        let now = Instant::now();
        let seen = cache.generation().unwrap();
        let huge = reactor_with_code(MOST_REACTOR_BYTES / 10 + 1);
        let id = huge.0.id;
        cache.put_reactor(id, seen, now, huge);
        assert!(cache.reactor(id, now).is_none(), "too large to keep");
        let big = MOST_REACTOR_BYTES / 20;
        for _ in 0..100 {
            let entry = reactor_with_code(big);
            let id = entry.0.id;
            cache.put_reactor(id, seen, now, entry);
            assert!(cache.reactor(id, now).is_some());
            assert!(cache.entries().reactor_bytes <= MOST_REACTOR_BYTES);
        }
        assert!(cache.entries().reactors.len() <= 20);
        cache.forget();
        assert_eq!(cache.entries().reactor_bytes, 0);
    }

    #[test]
    fn an_entry_is_read_again_after_its_time_and_the_memory_is_bounded() {
        let cache = listening();
        let then = Instant::now();
        let seen = cache.generation().unwrap();
        cache.put("k".into(), seen, then, app("a"));
        assert!(
            cache
                .get(
                    "k",
                    then + KEPT_FOR.saturating_sub(Duration::from_millis(1))
                )
                .is_some()
        );
        assert!(cache.get("k", then + KEPT_FOR).is_none());
        for i in 0..MOST {
            cache.put(format!("{i}"), seen, then, app("a"));
        }
        assert!(cache.entries().by_key.len() <= MOST);
        assert!(cache.get("k", then).is_none(), "a full memory starts again");
    }
}
