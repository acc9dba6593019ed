//! The tenant modules a worker compiled, as bytecode, so that a call of code the worker ran
//! recently loads it instead of parsing it again.
//!
//! Why: every call gets a fresh context and its module's state is its own (decisions §7), but
//! the text of a reactor's code rarely changes between calls, and parsing it was the largest
//! part of a call that uses no built-in module: 6 % of a warm call of a one-line formula, and
//! proportionally more for real code (`docs/performance-journal.md`). Loading bytecode makes the same
//! closures the parse would have made, in the call's own context.
//!
//! An entry is one tenant's: a call finds only what the same tenant ran with the same text.
//! Each tenant keeps at most [`PER_TENANT`] entries, and makes room among its own; the whole
//! cache holds [`MAX_ENTRIES`], each at most [`MAX_ENTRY`] bytes (a larger module is compiled at
//! every call, as before the cache), so that what one tenant runs does not push out another's
//! until many tenants share a worker, and an entry's size never decides what goes. What a
//! tenant can still tell from how long its calls take is whether other tenants' calls have run
//! on the same worker (when many did, its own entries went), not what their code is. Code that
//! does not compile, or whose compile ran out of memory, is never kept.

use std::rc::Rc;

use uuid::Uuid;

/// How many modules a worker keeps.
const MAX_ENTRIES: usize = 64;
/// How many modules of one tenant a worker keeps.
const PER_TENANT: usize = 8;
/// The largest module kept, source and bytecode together: all entries together stay within
/// 16 MiB.
const MAX_ENTRY: usize = 256 << 10;

struct Entry {
    tenant: Uuid,
    code: String,
    bytecode: Rc<Vec<u8>>,
}

impl Entry {
    fn size(&self) -> usize {
        self.code.len() + self.bytecode.len()
    }
}

/// The compiled modules of one worker, the most recently used last.
#[derive(Default)]
pub(crate) struct CodeCache {
    entries: Vec<Entry>,
    bytes: usize,
}

impl std::fmt::Debug for CodeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeCache")
            .field("entries", &self.entries.len())
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl CodeCache {
    /// The bytecode `tenant` compiled from exactly `code`, now the most recently used.
    pub(crate) fn get(&mut self, tenant: Uuid, code: &str) -> Option<Rc<Vec<u8>>> {
        let at = self
            .entries
            .iter()
            .rposition(|e| e.tenant == tenant && e.code == code)?;
        let entry = self.entries.remove(at);
        let bytecode = entry.bytecode.clone();
        self.entries.push(entry);
        Some(bytecode)
    }

    /// Keeps `bytecode`, compiled from `code` for `tenant`, in place of the least recently
    /// used entry of the same tenant when it has [`PER_TENANT`], else of any tenant when the
    /// cache is full; an entry over [`MAX_ENTRY`] is not kept.
    pub(crate) fn put(&mut self, tenant: Uuid, code: &str, bytecode: Rc<Vec<u8>>) {
        let entry = Entry {
            tenant,
            code: code.to_owned(),
            bytecode,
        };
        let size = entry.size();
        if size > MAX_ENTRY {
            return;
        }
        if let Some(at) = self
            .entries
            .iter()
            .position(|e| e.tenant == tenant && e.code == code)
        {
            self.remove(at);
        }
        let own = self.entries.iter().filter(|e| e.tenant == tenant).count();
        if own >= PER_TENANT {
            if let Some(at) = self.entries.iter().position(|e| e.tenant == tenant) {
                self.remove(at);
            }
        } else if self.entries.len() >= MAX_ENTRIES {
            self.remove(0);
        }
        self.bytes += size;
        self.entries.push(entry);
    }

    /// Forgets every entry.
    #[cfg(test)]
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }

    fn remove(&mut self, at: usize) {
        let gone = self.entries.remove(at);
        self.bytes -= gone.size();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize) -> Rc<Vec<u8>> {
        Rc::new(vec![7; n])
    }

    #[test]
    fn an_entry_is_found_only_by_its_own_tenant_and_text() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let mut cache = CodeCache::default();
        cache.put(a, "module.exports = 1", bytes(3));
        assert_eq!(cache.get(a, "module.exports = 1").map(|b| b.len()), Some(3));
        assert!(cache.get(b, "module.exports = 1").is_none());
        assert!(cache.get(a, "module.exports = 2").is_none());
        assert!(cache.get(a, "module.exports = 1 ").is_none());
    }

    #[test]
    fn a_tenant_makes_room_among_its_own_entries() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let mut cache = CodeCache::default();
        cache.put(b, "b's", bytes(1));
        for i in 0..PER_TENANT {
            cache.put(a, &i.to_string(), bytes(1));
        }
        // "0" used again: "1" is now a's oldest.
        assert!(cache.get(a, "0").is_some());
        for i in 0..100 {
            cache.put(a, &format!("new {i}"), bytes(1));
        }
        assert_eq!(
            cache.entries.iter().filter(|e| e.tenant == a).count(),
            PER_TENANT
        );
        assert!(cache.get(a, "1").is_none());
        assert!(cache.get(a, "new 99").is_some());
        // However much a runs, b's entry stays.
        assert!(cache.get(b, "b's").is_some());
    }

    #[test]
    fn the_least_recently_used_entry_goes_when_the_cache_is_full() {
        let mut cache = CodeCache::default();
        let tenants: Vec<Uuid> = (0..=(MAX_ENTRIES / PER_TENANT))
            .map(|_| Uuid::new_v4())
            .collect();
        for tenant in &tenants[..MAX_ENTRIES / PER_TENANT] {
            for i in 0..PER_TENANT {
                cache.put(*tenant, &i.to_string(), bytes(1));
            }
        }
        assert_eq!(cache.entries.len(), MAX_ENTRIES);
        assert!(cache.get(tenants[0], "0").is_some());
        let last = tenants[MAX_ENTRIES / PER_TENANT];
        cache.put(last, "x", bytes(1));
        assert_eq!(cache.entries.len(), MAX_ENTRIES);
        assert!(cache.get(tenants[0], "0").is_some());
        assert!(cache.get(tenants[0], "1").is_none());
        assert!(cache.get(last, "x").is_some());
    }

    #[test]
    fn a_large_module_is_not_kept_and_bytes_stay_counted() {
        let tenant = Uuid::new_v4();
        let mut cache = CodeCache::default();
        cache.put(tenant, "small", bytes(10));
        cache.put(tenant, "huge", bytes(MAX_ENTRY));
        assert!(cache.get(tenant, "huge").is_none());
        assert!(cache.get(tenant, "small").is_some());
        cache.put(tenant, "edge", bytes(MAX_ENTRY - "edge".len()));
        assert!(cache.get(tenant, "edge").is_some());
        // The same text put again replaces its entry.
        cache.put(tenant, "small", bytes(5));
        assert_eq!(cache.get(tenant, "small").map(|b| b.len()), Some(5));
        assert_eq!(
            cache.bytes,
            cache.entries.iter().map(Entry::size).sum::<usize>()
        );
        const { assert!(MAX_ENTRIES * MAX_ENTRY <= 16 << 20) };
    }
}
