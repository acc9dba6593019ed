//! A key read alone (`find_by_key_hash`), and the reactor of a key-and-reactor read, may be
//! answered from memory on PostgreSQL (`postgres/key_cache.rs`); these say it never answers
//! what was changed: not after this server's own change, nor after one made behind its back
//! (another instance, an administrator), nor after its listener lost its connection.

use std::time::{Duration, Instant};

use tokenvault_domain::application::{Application, KeyHash};
use tokenvault_domain::permission::{ApplicationType, Permission};
use tokenvault_domain::ports::{
    ApplicationRepository, Beside, FormulaRepository, ReactorRepository, TokenRepository,
};
use tokenvault_domain::tenant::TenantSettings;
use tokenvault_persistence::testing::{Backend, TestDatabase, backends};
use tokenvault_persistence::{DbOptions, connect};
use tokenvault_persistence::{
    SeaOrmApplicationRepository, SeaOrmFormulaRepository, SeaOrmReactorRepository,
    SeaOrmTenantRepository, SeaOrmTokenRepository,
};
use uuid::Uuid;

use crate::common::{beside, key_and_token, now, tenant_with, token};
use crate::reactor::{formula, key_and_reactor, reactor};

/// Shorter than the longest an entry is used without a notice (`key_cache::KEPT_FOR`, 10 s):
/// a change seen within it was heard, not timed out.
const HEARD_WITHIN: Duration = Duration::from_secs(5);

/// The name of the application of `key`, as a key read answers it (`None`: no such key).
async fn name_of(apps: &SeaOrmApplicationRepository, key: &KeyHash) -> Option<String> {
    apps.find_by_key_hash(key)
        .await
        .unwrap()
        .map(|(app, _)| app.name)
}

/// Waits until a key read of `key` answers `want`, at most [`HEARD_WITHIN`]; what it answered
/// last otherwise.
async fn answers_within(
    apps: &SeaOrmApplicationRepository,
    key: &KeyHash,
    want: Option<&str>,
) -> Result<(), Option<String>> {
    let deadline = Instant::now() + HEARD_WITHIN;
    loop {
        let got = name_of(apps, key).await;
        if got.as_deref() == want {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(got);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// How many of this database's sessions (PostgreSQL) bear one of `names`, an SQL list of
/// string literals.
async fn sessions(db: &TestDatabase, names: &str) -> u64 {
    db.execute(&format!(
        "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() \
         AND application_name IN ({names})"
    ))
    .await
}

/// Waits until this database's key-change listener uses its memory (PostgreSQL): its session
/// takes its name once its `LISTEN` is in force and its probe has come.
async fn listener_up(db: &TestDatabase) {
    let deadline = Instant::now() + HEARD_WITHIN;
    loop {
        if sessions(db, "'tokenvault-keys'").await > 0 {
            // Its flag is set once the name has answered.
            tokio::time::sleep(Duration::from_millis(100)).await;
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the key-change listener never listened"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `id` as an SQL literal of `backend` (SQLite keeps ids as 16-byte blobs).
fn id(backend: Backend, id: Uuid) -> String {
    match backend {
        Backend::Sqlite => format!("X'{}'", id.simple()),
        Backend::Postgres => format!("'{id}'"),
    }
}

/// Renames the application `app_id` in SQL, behind the server's back (one row, checked).
async fn rename(db: &TestDatabase, backend: Backend, app_id: Uuid, name: &str) {
    let sql = format!(
        "UPDATE applications SET name = '{name}' WHERE id = {}",
        id(backend, app_id)
    );
    assert_eq!(1, db.execute(&sql).await, "{sql}");
}

/// Silences the notices of application changes: from here on only the server's own forgetting
/// (or none) tells the memory of one.
async fn silence_application_notices(db: &TestDatabase) {
    db.execute("ALTER TABLE applications DISABLE TRIGGER applications_keys_changed")
        .await;
}

/// A database with one tenant whose private application holds `key`.
async fn one_key(backend: Backend, key: &KeyHash) -> (TestDatabase, Application) {
    let db = TestDatabase::create(backend).await;
    let tenants = SeaOrmTenantRepository::new(db.db.clone());
    let (_, app) = tenant_with(
        &tenants,
        TenantSettings::default(),
        (ApplicationType::Private, vec![Permission::TokenRead]),
        key,
    )
    .await;
    if backend == Backend::Postgres && db.citus_workers().is_empty() {
        listener_up(&db).await;
    }
    (db, app)
}

#[tokio::test]
async fn a_change_behind_the_servers_back_reaches_the_next_key_read() {
    let key = KeyHash([41; 32]);
    for backend in backends() {
        let (db, app) = one_key(backend, &key).await;
        let apps = SeaOrmApplicationRepository::new(db.db.clone());
        assert_eq!(name_of(&apps, &key).await.as_deref(), Some("m"));
        assert_eq!(
            name_of(&apps, &key).await.as_deref(),
            Some("m"),
            "read again"
        );

        rename(&db, backend, app.id, "renamed").await;
        answers_within(&apps, &key, Some("renamed"))
            .await
            .unwrap_or_else(|got| panic!("{backend:?}: a renamed application still {got:?}"));

        let deleted = if backend == Backend::Postgres {
            "now()"
        } else {
            "'2026-01-01T00:00:00.000000Z'"
        };
        assert_eq!(
            1,
            db.execute(&format!(
                "UPDATE tenants SET deleted_at = {deleted} WHERE id = {}",
                id(backend, app.tenant_id)
            ))
            .await
        );
        answers_within(&apps, &key, None)
            .await
            .unwrap_or_else(|got| panic!("{backend:?}: a deleted tenant's key still {got:?}"));
        db.destroy().await;
    }
}

#[tokio::test]
async fn the_servers_own_change_is_answered_at_once_and_memory_is_used_until_then() {
    let key = KeyHash([42; 32]);
    for backend in backends() {
        let (db, mut app) = one_key(backend, &key).await;
        let apps = SeaOrmApplicationRepository::new(db.db.clone());
        let memory = backend == Backend::Postgres && db.citus_workers().is_empty();
        if memory {
            // No notice from here on: only the server's own forgetting can tell it.
            silence_application_notices(&db).await;
        }
        assert_eq!(name_of(&apps, &key).await.as_deref(), Some("m"));
        rename(&db, backend, app.id, "unheard").await;
        let expected = if memory { "m" } else { "unheard" };
        assert_eq!(
            name_of(&apps, &key).await.as_deref(),
            Some(expected),
            "{backend:?}: a change no notice told of is seen only where nothing is kept"
        );

        app.name = "updated".into();
        assert!(apps.update(&app).await.unwrap());
        assert_eq!(
            name_of(&apps, &key).await.as_deref(),
            Some("updated"),
            "{backend:?}: the server's own update, at once"
        );
        assert!(apps.delete(app.tenant_id, app.id).await.unwrap());
        assert_eq!(
            name_of(&apps, &key).await,
            None,
            "{backend:?}: the server's own delete, at once"
        );
        db.destroy().await;
    }
}

#[tokio::test]
async fn a_change_while_the_listener_was_cut_off_is_not_missed() {
    let key = KeyHash([43; 32]);
    for backend in backends() {
        let (db, app) = one_key(backend, &key).await;
        if backend != Backend::Postgres || !db.citus_workers().is_empty() {
            db.destroy().await;
            continue;
        }
        let apps = SeaOrmApplicationRepository::new(db.db.clone());
        assert_eq!(name_of(&apps, &key).await.as_deref(), Some("m"));
        let cut = db
            .execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = current_database() AND application_name = 'tokenvault-keys'",
            )
            .await;
        assert_eq!(cut, 1, "one listener per database");
        // Gone before `listener_up` looks again (a new one takes a second to come).
        let deadline = Instant::now() + HEARD_WITHIN;
        while sessions(&db, "'tokenvault-keys'").await > 0 {
            assert!(Instant::now() < deadline, "the cut listener lingers");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        rename(&db, backend, app.id, "while cut off").await;
        answers_within(&apps, &key, Some("while cut off"))
            .await
            .unwrap_or_else(|got| panic!("a change while cut off still {got:?}"));

        // It listens again, and hears.
        listener_up(&db).await;
        assert_eq!(name_of(&apps, &key).await.as_deref(), Some("while cut off"));
        rename(&db, backend, app.id, "after").await;
        answers_within(&apps, &key, Some("after"))
            .await
            .unwrap_or_else(|got| panic!("a change after the way back still {got:?}"));
        // And keeps again: once read, a change no notice tells of is not seen.
        assert_eq!(name_of(&apps, &key).await.as_deref(), Some("after"));
        silence_application_notices(&db).await;
        rename(&db, backend, app.id, "unheard").await;
        assert_eq!(
            name_of(&apps, &key).await.as_deref(),
            Some("after"),
            "the memory is in use again"
        );
        db.destroy().await;
    }
}

/// A database opened without keys in memory (a CLI command) starts no listener, even once it
/// read a key, where one opened with them (a server) does. PostgreSQL.
#[tokio::test]
async fn a_command_starts_no_listener() {
    for backend in backends() {
        let db = TestDatabase::create(backend).await;
        if backend != Backend::Postgres || !db.citus_workers().is_empty() {
            db.destroy().await;
            continue;
        }
        // The test database's own listener first, settled.
        listener_up(&db).await;
        let listeners = || sessions(&db, "'tokenvault-keys', 'tokenvault-keys-starting'");
        let before = listeners().await;
        let options = DbOptions {
            keys_in_memory: false,
            ..DbOptions::new(1)
        };
        let command = connect(&db.url, options).await.unwrap();
        let apps = SeaOrmApplicationRepository::new(command.clone());
        assert!(
            apps.find_by_key_hash(&KeyHash([46; 32]))
                .await
                .unwrap()
                .is_none()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(listeners().await, before, "a command's database listens");
        let server = connect(&db.url, DbOptions::new(1)).await.unwrap();
        let deadline = Instant::now() + HEARD_WITHIN;
        while listeners().await != before + 1 {
            assert!(
                Instant::now() < deadline,
                "a server's database never listened"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        command.close().await.unwrap();
        server.close().await.unwrap();
        db.destroy().await;
    }
}

/// A key-and-token read keeps the key it read, and a kept key reads its token alone
/// (`postgres/key_group.rs`): the key is what memory holds — never a change it was not told of,
/// until it is told — and the token still its tenant's live one, read each time.
#[tokio::test]
async fn a_kept_key_reads_its_token_alone_and_is_forgotten_as_any() {
    let key = KeyHash([45; 32]);
    for backend in backends() {
        let (db, app) = one_key(backend, &key).await;
        let apps = SeaOrmApplicationRepository::new(db.db.clone());
        let tokens = SeaOrmTokenRepository::new(db.db.clone());
        let memory = backend == Backend::Postgres && db.citus_workers().is_empty();
        let ahead = db.citus_workers().is_empty();
        let mine = token(app.tenant_id, "kept-t", "/", now());
        tokens.insert(&mine).await.unwrap();
        // Read with its token first: nothing was kept before this.
        let read = key_and_token(&apps, &key, "kept-t", now()).await.unwrap();
        assert_eq!(read.application.name, "m");
        assert_eq!(read.token, beside(ahead, Some(mine.clone())));
        if memory {
            silence_application_notices(&db).await;
        }
        rename(&db, backend, app.id, "unheard").await;
        let read = key_and_token(&apps, &key, "kept-t", now()).await.unwrap();
        let expected = if memory { "m" } else { "unheard" };
        assert_eq!(
            read.application.name, expected,
            "{backend:?}: the key from memory where it is kept"
        );
        assert_eq!(
            read.token,
            beside(ahead, Some(mine.clone())),
            "{backend:?}: and the token read"
        );
        // The token is read each time: gone from the database, gone from the answer.
        assert!(tokens.delete(app.tenant_id, "kept-t").await.unwrap());
        let read = key_and_token(&apps, &key, "kept-t", now()).await.unwrap();
        assert_eq!(read.token, beside(ahead, None), "{backend:?}");
        assert!(apps.delete(app.tenant_id, app.id).await.unwrap());
        assert!(
            key_and_token(&apps, &key, "kept-t", now()).await.is_none(),
            "{backend:?}: the server's own delete, at once"
        );
        db.destroy().await;
    }
}

/// The code of the formula a key-and-reactor read of `reactor_id` answers for `key`, and
/// whether it read the token `token_id` with it.
async fn code_of(
    apps: &SeaOrmApplicationRepository,
    key: &KeyHash,
    reactor_id: Uuid,
    token_id: &str,
) -> Option<(String, bool)> {
    let read = key_and_reactor(apps, key, reactor_id, Some(token_id.into()), now()).await?;
    let token = matches!(read.token, Beside::Read(Some(ref t)) if t.id == token_id);
    match read.reactor {
        Beside::Read(Some((_, Some(formula)))) => Some((formula.code, token)),
        _ => None,
    }
}

#[tokio::test]
async fn a_reactor_or_formula_changed_anywhere_is_read_anew() {
    let key = KeyHash([44; 32]);
    for backend in backends() {
        let (db, app) = one_key(backend, &key).await;
        let apps = SeaOrmApplicationRepository::new(db.db.clone());
        let formulas = SeaOrmFormulaRepository::new(db.db.clone());
        let reactors = SeaOrmReactorRepository::new(db.db.clone());
        let tokens = SeaOrmTokenRepository::new(db.db.clone());
        let mut f = formula(app.tenant_id, "first");
        formulas.insert(&f).await.unwrap();
        let r = reactor(app.tenant_id, f.id);
        reactors.insert(&r).await.unwrap();
        let card = token(app.tenant_id, "card", "/", now());
        tokens.insert(&card).await.unwrap();
        let memory = backend == Backend::Postgres && db.citus_workers().is_empty();
        let read = |want: &str| (want.to_owned(), memory || backend == Backend::Sqlite);
        assert_eq!(
            code_of(&apps, &key, r.id, "card").await,
            Some(read("first"))
        );
        assert_eq!(
            code_of(&apps, &key, r.id, "card").await,
            Some(read("first")),
            "{backend:?}: read again, its token with it"
        );

        // Behind the server's back: heard.
        assert_eq!(
            1,
            db.execute(&format!(
                "UPDATE reactor_formulas SET code = 'second' WHERE id = {}",
                id(backend, f.id)
            ))
            .await
        );
        let deadline = Instant::now() + HEARD_WITHIN;
        while code_of(&apps, &key, r.id, "card").await != Some(read("second")) {
            assert!(
                Instant::now() < deadline,
                "{backend:?}: a changed formula never heard"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }

        // No notice from here on: the memory answers until the server's own change.
        if memory {
            db.execute(
                "ALTER TABLE reactor_formulas DISABLE TRIGGER reactor_formulas_keys_changed",
            )
            .await;
        }
        assert_eq!(
            1,
            db.execute(&format!(
                "UPDATE reactor_formulas SET code = 'unheard' WHERE id = {}",
                id(backend, f.id)
            ))
            .await
        );
        let expected = if memory { "second" } else { "unheard" };
        assert_eq!(
            code_of(&apps, &key, r.id, "card").await,
            Some(read(expected)),
            "{backend:?}: the memory is what answers"
        );
        f.code = "third".into();
        assert!(formulas.update(&f, false).await.unwrap());
        assert_eq!(
            code_of(&apps, &key, r.id, "card").await,
            Some(read("third")),
            "{backend:?}: the server's own change, at once"
        );
        assert!(reactors.delete(app.tenant_id, r.id).await.unwrap());
        assert_eq!(
            code_of(&apps, &key, r.id, "card").await,
            None,
            "{backend:?}: deleted"
        );
        db.destroy().await;
    }
}
