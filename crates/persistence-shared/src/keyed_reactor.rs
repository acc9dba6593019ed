//! An API key's application, its tenant's settings, one of the tenant's reactors with its
//! formula and the token the call's arguments name, in one round trip: the read path of
//! `POST /reactors/{id}/react`.
//!
//! On PostgreSQL one statement joins the five tables (the reactor and the token each by a
//! `LEFT JOIN` confined to the application's own tenant, the formula to the reactor's), so a
//! call pays one network round trip for what took four. Joining the token's own statement
//! raised a warm react's rate on PostgreSQL by about a fifth (+21 % by hand, +9 % and +19 % in
//! two bench pairs; docs/performance-journal.md, seventeenth session): a statement costs PostgreSQL
//! and the server mostly per statement. On SQLite the
//! same join runs on the calling thread (`sqlite/direct.rs`): one read transaction instead of four,
//! whose begin and end (SQLite's locks on the log) were most of each point read's cost — 15 %
//! of the server's CPU under a react load went to the three reads before the token joined.
//! Only a private application's key, the only type that may hold `token:use` (decisions §4),
//! makes the server read a reactor or a token here, and nothing read is looked at before the
//! use case has checked the caller (`Reactors::react`, which authorizes the token as any
//! detokenization does).

use tokenvault_domain::application::Application;
use tokenvault_domain::formula::Formula;
use tokenvault_domain::ports::{Beside, KeyRead};
use tokenvault_domain::reactor::Reactor;
use tokenvault_domain::tenant::TenantSettings;
use tokenvault_domain::token::StoredToken;

/// The key read with its reactor and, when one was asked for, the token.
pub fn with_reactor(
    application: Application,
    settings: TenantSettings,
    reactor: Option<(Reactor, Option<Formula>)>,
    token: Beside<Option<StoredToken>>,
) -> KeyRead {
    KeyRead {
        reactor: Beside::Read(reactor),
        token,
        ..KeyRead::alone(application, settings)
    }
}
