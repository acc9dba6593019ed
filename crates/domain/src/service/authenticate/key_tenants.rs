//! The tenant of each application key that searched (`searching.rs`), by the key's hash: a
//! guess the key-and-search read checks, never trusted.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use uuid::Uuid;

use crate::application::KeyHash;

/// Keys remembered at most; the memory starts again empty beyond (only keys that
/// authenticated are remembered, so it holds at most the applications that search).
const REMEMBERED: usize = 10_000;

/// The tenant of each application key that searched, by the key's hash.
#[derive(Debug, Default)]
pub(in crate::service) struct KeyTenants(Mutex<HashMap<KeyHash, Uuid>>);

impl KeyTenants {
    pub(super) fn get(&self, hash: &KeyHash) -> Option<Uuid> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(hash)
            .copied()
    }

    pub(super) fn remember(&self, hash: KeyHash, tenant_id: Uuid) {
        let mut known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if known.len() >= REMEMBERED && !known.contains_key(&hash) {
            known.clear();
        }
        known.insert(hash, tenant_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_is_bounded_and_keeps_the_newest_key() {
        let known = KeyTenants::default();
        for i in 0..REMEMBERED {
            let mut bytes = [0u8; 32];
            bytes[..8].copy_from_slice(&(i as u64).to_le_bytes());
            known.remember(KeyHash(bytes), Uuid::nil());
        }
        let newest = KeyHash([0xff; 32]);
        let tenant = Uuid::from_u128(7);
        known.remember(newest, tenant);
        assert_eq!(known.get(&newest), Some(tenant));
        assert_eq!(known.0.lock().unwrap().len(), 1, "started again");
        assert_eq!(known.get(&KeyHash([0u8; 32])), None);
    }
}
