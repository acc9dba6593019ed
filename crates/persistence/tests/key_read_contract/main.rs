//! `find_by_key_hash_also`: an API key's application and, in the same round trip, what the call
//! asks for beside it — a token (`read`), a reactor with its formula (`reactor`), a search's
//! matches (`search`) — on SQLite and PostgreSQL; and the key read alone, which PostgreSQL may
//! answer from memory (`memory`).

#![allow(clippy::unwrap_used)] // tests fail loudly by design

#[path = "../common/mod.rs"]
mod common;
mod memory;
mod reactor;
mod read;
mod search;
