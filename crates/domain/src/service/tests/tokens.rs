//! Token use cases: create, read, update, dedup, usage.

use super::*;
use crate::access::{AccessRule, RuleScope, Transform};
use crate::container::Container;
use crate::ports::Visibility;
use crate::token_new::RawNewToken;
use serde_json::json;

fn cipher() -> MockCiph {
    let mut c = MockCiph::new();
    c.expect_has_tenant_key().return_const(true);
    c.expect_encrypt()
        .returning(|_, _, p| Ok([b"ct:".as_slice(), p].concat()));
    c.expect_decrypt().returning(|_, _, c| Ok(c[3..].to_vec()));
    c.expect_fingerprint()
        .returning(|_, input| Ok(format!("fp{}", input.len())));
    c.expect_search_term()
        .returning(|_, input| Ok(format!("st{}", String::from_utf8_lossy(input))));
    c
}

fn exprs() -> MockExprs {
    let mut e = MockExprs::new();
    e.expect_check().returning(|_| Ok(()));
    e.expect_render_metered()
        .returning(|_, data, _| Ok(data.to_string()));
    e
}

pub(super) fn token_vault(tokens: MockTokens) -> Vault {
    Vault::new(token_ports(tokens))
}

pub(super) fn token_ports(tokens: MockTokens) -> Ports {
    Ports {
        tenants: Arc::new(MockTenants::new()),
        applications: Arc::new(MockApplications::new()),
        keys: Arc::new(keys()),
        clock: Arc::new(FixedClock),
        tokens: Arc::new(tokens),
        usage: Arc::new(MockUsage::new()),
        cipher: Arc::new(cipher()),
        expressions: Arc::new(exprs()),
        formulas: Arc::new(NoFormulas),
        reactors: Arc::new(NoReactors),
        code: Arc::new(MockCode::new()),
        svc: Arc::new(NoSvc),
        proxies: Arc::new(NoProxies),
        forwarder: Arc::new(NoForwarder),
        idempotency: Arc::new(NoIdempotency),
        sessions: Arc::new(MockSessions::new()),
        audit: Arc::new(NoAudit::default()),
    }
}

pub(super) fn caller(
    permissions: &[Permission],
    rules: Vec<AccessRule>,
    settings: TenantSettings,
) -> Principal {
    Principal {
        application_id: Uuid::from_u128(1),
        tenant_id: Uuid::from_u128(100),
        app_type: ApplicationType::Private,
        permissions: permissions.to_vec(),
        rules,
        settings,
        session: None,
        trace_id: None,
    }
}

pub(super) fn rule(
    container: &str,
    transform: Transform,
    permissions: &[Permission],
) -> AccessRule {
    AccessRule {
        description: None,
        priority: 1,
        scope: RuleScope::Container(Container::parse(container).unwrap()),
        transform,
        permissions: permissions.to_vec(),
    }
}

fn raw(ty: &str, data: serde_json::Value) -> RawNewToken {
    RawNewToken {
        token_type: Some(ty.into()),
        data: Some(data),
        ..RawNewToken::default()
    }
}

pub(super) fn stored(id: &str, container: &str, data: &serde_json::Value) -> StoredToken {
    StoredToken {
        id: id.into(),
        tenant_id: Uuid::from_u128(100),
        token_type: "card_number".into(),
        container: container.into(),
        metadata: std::collections::BTreeMap::new(),
        data: [b"ct:".as_slice(), data.to_string().as_bytes()].concat(),
        mask: None,
        fingerprint: None,
        dedup_key: None,
        fingerprint_expression: None,
        created_by: None,
        created_at: now(),
        modified_by: None,
        modified_at: None,
        expires_at: None,
        deduplicate: None,
        search_indexes: vec![],
        search_terms: vec![],
        version: 0,
    }
}

#[tokio::test]
async fn create_outside_the_rule_container_is_forbidden_before_any_write() {
    let mut tokens = MockTokens::new();
    tokens.expect_insert().never();
    let vault = token_vault(tokens);
    let who = caller(
        &[],
        vec![rule(
            "/general/",
            Transform::Mask,
            &[Permission::TokenCreate],
        )],
        TenantSettings::default(),
    );
    let err = vault
        .tokens
        .create_token(&who, raw("card_number", json!("4242424242424242")))
        .await
        .unwrap_err();
    assert!(matches!(err, TokenError::Failed(Error::Forbidden)));
}

#[tokio::test]
async fn data_is_encrypted_before_storage_and_never_returned_on_create() {
    let mut tokens = MockTokens::new();
    tokens
        .expect_insert()
        .withf(|t| {
            t.data.starts_with(b"ct:") && t.container == "/pci/high/" && t.fingerprint.is_none()
        })
        .times(1)
        .returning(|_| Ok(TokenWrite::Done));
    let vault = token_vault(tokens);
    let who = caller(
        &[Permission::TokenCreate],
        vec![],
        TenantSettings::default(),
    );
    let (view, created) = vault
        .tokens
        .create_token(&who, raw("card_number", json!("4242424242424242")))
        .await
        .unwrap();
    assert!(created);
    assert!(view.shown.is_none());
    // A generated id is a UUIDv7 of the clock's time (the token's `created_at`).
    let id = Uuid::parse_str(&view.token.id).unwrap();
    assert_eq!(id.get_version_num(), 7);
    let (secs, _) = id.get_timestamp().unwrap().to_unix();
    assert_eq!(i64::try_from(secs).unwrap(), now().unix_timestamp());
    assert_eq!(view.token.created_at, now());
}

#[tokio::test]
async fn a_create_of_a_tenant_deleted_meanwhile_is_unauthenticated() {
    let mut tokens = MockTokens::new();
    tokens
        .expect_insert()
        .times(1)
        .returning(|_| Ok(TokenWrite::Missing));
    tokens
        .expect_insert_all()
        .times(1)
        .returning(|_| Ok(TokenWrite::Missing));
    let vault = token_vault(tokens);
    let who = caller(
        &[Permission::TokenCreate],
        vec![],
        TenantSettings::default(),
    );
    let created = vault
        .tokens
        .create_token(&who, raw("token", json!("v")))
        .await;
    assert!(
        matches!(created, Err(TokenError::Failed(Error::Unauthenticated))),
        "{created:?}"
    );
    let batch = vault
        .tokens
        .tokenize(&who, json!([{"type": "token", "data": "v"}]))
        .await;
    assert!(
        matches!(batch, Err(TokenError::Failed(Error::Unauthenticated))),
        "{batch:?}"
    );
}

#[tokio::test]
async fn losing_a_dedup_race_returns_the_winner() {
    let mut tokens = MockTokens::new();
    let winner = stored("winner", "/pci/high/", &json!("4242424242424242"));
    let mut lookups = 0;
    tokens
        .expect_find_by_fingerprint()
        .returning(move |_, _, _, _, _, _| {
            lookups += 1;
            // Nothing the first time (before the insert), the winner after the conflict.
            Ok((lookups > 1).then(|| winner.clone()))
        });
    tokens
        .expect_insert()
        .withf(|t| t.dedup_key.is_some())
        .times(1)
        .returning(|_| Ok(TokenWrite::DuplicateFingerprint));
    let vault = token_vault(tokens);
    let settings = TenantSettings {
        fingerprint_tokens: false,
        deduplicate_tokens: true,
    };
    let who = caller(&[Permission::TokenCreate], vec![], settings);
    let (view, created) = vault
        .tokens
        .create_token(&who, raw("card_number", json!("4242424242424242")))
        .await
        .unwrap();
    assert!(!created);
    assert_eq!(view.token.id, "winner");
}

#[tokio::test]
async fn an_expired_duplicate_in_the_index_is_purged_not_a_conflict() {
    let mut tokens = MockTokens::new();
    tokens
        .expect_find_by_fingerprint()
        .returning(|_, _, _, _, _, _| Ok(None));
    let mut inserts = 0;
    tokens.expect_insert().times(2).returning(move |_| {
        inserts += 1;
        Ok(if inserts == 1 {
            TokenWrite::DuplicateFingerprint
        } else {
            TokenWrite::Done
        })
    });
    tokens
        .expect_delete_expired_holders()
        .times(1)
        .returning(|_, _, _| Ok(1));
    let vault = token_vault(tokens);
    let settings = TenantSettings {
        fingerprint_tokens: false,
        deduplicate_tokens: true,
    };
    let who = caller(&[Permission::TokenCreate], vec![], settings);
    let (_, created) = vault
        .tokens
        .create_token(&who, raw("card_number", json!("4242424242424242")))
        .await
        .unwrap();
    assert!(created);
}

#[tokio::test]
async fn a_taken_literal_id_is_a_conflict_of_its_own() {
    let mut tokens = MockTokens::new();
    tokens
        .expect_insert()
        .times(1)
        .returning(|_| Ok(TokenWrite::DuplicateId));
    let vault = token_vault(tokens);
    let who = caller(
        &[Permission::TokenCreate],
        vec![],
        TenantSettings::default(),
    );
    let mut new = raw("token", json!("v"));
    new.id = Some("my-id".into());
    let err = vault.tokens.create_token(&who, new).await.unwrap_err();
    assert!(matches!(err, TokenError::IdTaken), "{err:?}");
}

#[tokio::test]
async fn a_tokenize_naming_one_id_twice_is_refused_before_any_write() {
    let mut tokens = MockTokens::new();
    tokens.expect_insert_all().never();
    let vault = token_vault(tokens);
    let who = caller(
        &[Permission::TokenCreate],
        vec![],
        TenantSettings::default(),
    );
    let err = vault
        .tokens
        .tokenize(
            &who,
            json!([
                {"type": "token", "id": "same", "data": "a"},
                {"type": "token", "id": "same", "data": "b"}
            ]),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, TokenError::IdRepeated), "{err:?}");
}

#[tokio::test]
async fn an_identical_token_that_cannot_be_returned_is_a_conflict_of_its_own() {
    let mut tokens = MockTokens::new();
    tokens
        .expect_find_by_fingerprint()
        .returning(|_, _, _, _, _, _| Ok(None));
    tokens
        .expect_insert()
        .times(1)
        .returning(|_| Ok(TokenWrite::DuplicateFingerprint));
    // No expired token holds the key either: nothing to purge and try again.
    tokens
        .expect_delete_expired_holders()
        .times(1)
        .returning(|_, _, _| Ok(0));
    let vault = token_vault(tokens);
    let settings = TenantSettings {
        fingerprint_tokens: false,
        deduplicate_tokens: true,
    };
    let who = caller(&[Permission::TokenCreate], vec![], settings);
    let err = vault
        .tokens
        .create_token(&who, raw("card_number", json!("4242424242424242")))
        .await
        .unwrap_err();
    assert!(matches!(err, TokenError::IdenticalExists), "{err:?}");
}

/// A report must see every activity recorded before it started, even while the background
/// flush has drained the buffer and is still writing (docs/decisions.md §10). The write is
/// made slow by holding the fake repository until the test lets it go; no timing involved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_waits_for_the_flush_in_flight() {
    use futures_util::FutureExt as _;
    use std::sync::atomic::{AtomicU64, Ordering};
    let written = Arc::new(AtomicU64::new(0));
    let (entered_tx, entered_rx) = tokio::sync::oneshot::channel::<()>();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let entered_tx = std::sync::Mutex::new(Some(entered_tx));
    let go_rx = std::sync::Mutex::new(go_rx);
    let mut tokens = MockTokens::new();
    tokens.expect_get().returning(|_, id, _| {
        // Made last month: a read this month is recorded as activity.
        let mut token = stored(id, "/pci/high/", &json!("4242424242424242"));
        token.created_at = now() - Duration::days(40);
        Ok(Some(token))
    });
    let mut usage = MockUsage::new();
    let w = written.clone();
    usage.expect_record_activity().returning(move |entries| {
        if let Some(tx) = entered_tx.lock().unwrap().take() {
            let _ = tx.send(());
        }
        go_rx.lock().unwrap().recv().unwrap();
        w.fetch_add(entries.len() as u64, Ordering::SeqCst);
        Ok(())
    });
    let w = written.clone();
    usage
        .expect_count_active()
        .returning(move |_, _| Ok(w.load(Ordering::SeqCst)));
    usage.expect_count_by_type().returning(|_, _| Ok(vec![]));
    let mut ports = token_ports(tokens);
    ports.usage = Arc::new(usage);
    let vault = Vault::new(ports);
    let who = caller(
        &[Permission::TokenRead, Permission::ReportRead],
        vec![],
        TenantSettings::default(),
    );
    vault.tokens.get_token(&who, "t-1").await.unwrap();
    let background = tokio::spawn({
        let vault = vault.clone();
        async move { vault.usage.flush_activity().await }
    });
    entered_rx.await.unwrap(); // the background flush has drained the buffer and is writing
    let mut report = Box::pin(vault.usage.usage_report(&who));
    assert!(
        (&mut report).now_or_never().is_none(),
        "the report waits for the flush in flight"
    );
    go_tx.send(()).unwrap();
    assert_eq!(background.await.unwrap().unwrap(), 1);
    assert_eq!(report.await.unwrap().monthly_active_tokens, 1);
}

#[tokio::test]
async fn reads_apply_the_deciding_rule() {
    let mut tokens = MockTokens::new();
    tokens
        .expect_get()
        .returning(|_, id, _| Ok(Some(stored(id, "/pci/high/", &json!("4242424242424242")))));
    let vault = token_vault(tokens);
    let reveal = caller(
        &[Permission::TokenRead],
        vec![rule("/pci/", Transform::Reveal, &[Permission::TokenRead])],
        TenantSettings::default(),
    );
    assert_eq!(
        vault.tokens.get_token(&reveal, "t").await.unwrap().shown,
        Some(json!("4242424242424242"))
    );
    let redact = caller(
        &[Permission::TokenRead],
        vec![rule("/", Transform::Redact, &[Permission::TokenRead])],
        TenantSettings::default(),
    );
    assert_eq!(
        vault.tokens.get_token(&redact, "t").await.unwrap().shown,
        None
    );
    let elsewhere = caller(
        &[],
        vec![rule("/bank/", Transform::Reveal, &[Permission::TokenRead])],
        TenantSettings::default(),
    );
    assert!(matches!(
        vault.tokens.get_token(&elsewhere, "t").await,
        Err(Error::Forbidden)
    ));
}

#[tokio::test]
async fn lists_push_visibility_into_the_query() {
    let mut tokens = MockTokens::new();
    tokens
        .expect_list()
        .withf(|_, f, _, _| f.visibility == Visibility::Prefixes(vec!["/pci/".into()]))
        .times(1)
        .returning(|_, _, page, _| {
            Ok(Page {
                items: vec![],
                total_items: 0,
                request: page,
            })
        });
    let vault = token_vault(tokens);
    let who = caller(
        &[],
        vec![rule("/pci/", Transform::Mask, &[Permission::TokenRead])],
        TenantSettings::default(),
    );
    let filter = TokenFilter {
        ids: vec![],
        types: vec![],
        metadata: vec![],
        visibility: Visibility::All,
        parent: None,
    };
    let page = vault
        .tokens
        .list_tokens(&who, filter, PageRequest::default())
        .await
        .unwrap();
    assert_eq!(page.total_items, 0);
}

#[tokio::test]
async fn detokenize_refuses_more_than_a_hundred_tokens_without_reading() {
    let mut tokens = MockTokens::new();
    tokens.expect_get_many().never();
    let vault = token_vault(tokens);
    let who = caller(&[Permission::TokenRead], vec![], TenantSettings::default());
    let body = json!(
        (0..101)
            .map(|i| format!("{{{{ token-{i} }}}}"))
            .collect::<Vec<_>>()
    );
    assert!(matches!(
        vault.tokens.detokenize(&who, body).await,
        Err(Error::Validation(_))
    ));
}

fn keyed_vault(applications: MockApplications, tokens: MockTokens) -> Vault {
    let mut sessions = MockSessions::new();
    sessions
        .expect_find_by_key_hash()
        .returning(|_, _| Ok(None));
    Vault::new(Ports {
        applications: Arc::new(applications),
        sessions: Arc::new(sessions),
        ..token_ports(tokens)
    })
}

fn keyed(app: Application, token: Option<StoredToken>) -> MockApplications {
    let mut apps = MockApplications::new();
    apps.expect_find_by_key_hash_also()
        .returning(move |_, also, _| {
            assert!(also.token.is_some() && also.reactor.is_none() && also.search.is_none());
            Ok(Some(KeyRead {
                token: Beside::Read(token.clone()),
                ..KeyRead::alone(app.clone(), TenantSettings::default())
            }))
        });
    apps
}

fn revealing_app() -> Application {
    let mut app = stored_app(Uuid::from_u128(100), None);
    app.permissions = vec![]; // the rule alone grants
    app.rules = vec![rule("/pci/", Transform::Reveal, &[Permission::TokenRead])];
    app
}

/// A key read that read nothing beside the key (`Beside::NotRead`: SQLite busy, Citus, a
/// database that reads nothing ahead) leaves the read to the store, checked as any read.
#[tokio::test]
async fn a_key_read_that_read_nothing_ahead_reads_through_the_store() {
    let card = stored("t", "/pci/high/", &json!("4242424242424242"));
    let alone = |app: Application| {
        let mut apps = MockApplications::new();
        apps.expect_find_by_key_hash_also()
            .returning(move |_, _, _| {
                Ok(Some(KeyRead::alone(app.clone(), TenantSettings::default())))
            });
        apps
    };
    let mut tokens = MockTokens::new();
    let found = card.clone();
    tokens
        .expect_get()
        .times(1)
        .returning(move |_, _, _| Ok(Some(found.clone())));
    let vault = keyed_vault(alone(revealing_app()), tokens);
    let (who, prefetched) = vault
        .auth
        .authenticate_reading(Some(KEY), "t")
        .await
        .unwrap();
    assert!(prefetched.is_none(), "nothing was read beside the key");
    let view = vault
        .tokens
        .get_token_prefetched(&who, "t", prefetched)
        .await
        .unwrap();
    assert_eq!(view.shown, Some(json!("4242424242424242")));

    // A caller without the permission is refused before the store is asked.
    let mut tokens = MockTokens::new();
    tokens.expect_get().never();
    let mut no_rights = revealing_app();
    no_rights.rules = vec![];
    let vault = keyed_vault(alone(no_rights), tokens);
    let (who, prefetched) = vault
        .auth
        .authenticate_reading(Some(KEY), "t")
        .await
        .unwrap();
    assert!(matches!(
        vault
            .tokens
            .get_token_prefetched(&who, "t", prefetched)
            .await,
        Err(Error::Forbidden)
    ));
}

#[tokio::test]
async fn a_read_with_its_key_reads_once_and_decides_as_any_read() {
    let mut tokens = MockTokens::new();
    tokens.expect_get().never();
    let card = stored("t", "/pci/high/", &json!("4242424242424242"));
    let vault = keyed_vault(keyed(revealing_app(), Some(card.clone())), tokens);
    let (who, prefetched) = vault
        .auth
        .authenticate_reading(Some(KEY), "t")
        .await
        .unwrap();
    assert_eq!(who.application_id, Uuid::from_u128(7));
    let view = vault
        .tokens
        .get_token_prefetched(&who, "t", prefetched)
        .await
        .unwrap();
    assert_eq!(view.shown, Some(json!("4242424242424242")));

    // The same row outside the rule's container: refused, as for a plain read.
    let mut tokens = MockTokens::new();
    tokens.expect_get().never();
    let bank = stored("t", "/bank/", &json!("1234"));
    let vault = keyed_vault(keyed(revealing_app(), Some(bank)), tokens);
    let (who, prefetched) = vault
        .auth
        .authenticate_reading(Some(KEY), "t")
        .await
        .unwrap();
    assert!(matches!(
        vault
            .tokens
            .get_token_prefetched(&who, "t", prefetched)
            .await,
        Err(Error::Forbidden)
    ));

    // No such token in the key's tenant: 404 without a second read.
    let mut tokens = MockTokens::new();
    tokens.expect_get().never();
    let vault = keyed_vault(keyed(revealing_app(), None), tokens);
    let (who, prefetched) = vault
        .auth
        .authenticate_reading(Some(KEY), "t")
        .await
        .unwrap();
    assert!(matches!(
        vault
            .tokens
            .get_token_prefetched(&who, "t", prefetched)
            .await,
        Err(Error::NotFound)
    ));
}

#[tokio::test]
async fn a_prefetched_row_stands_only_for_its_tenant_and_id() {
    let card = stored("t", "/pci/high/", &json!("4242424242424242"));
    let mut tokens = MockTokens::new();
    tokens.expect_get().times(2).returning(|_, _, _| Ok(None));
    let vault = keyed_vault(keyed(revealing_app(), Some(card)), tokens);
    let (who, prefetched) = vault
        .auth
        .authenticate_reading(Some(KEY), "t")
        .await
        .unwrap();
    assert!(matches!(
        vault
            .tokens
            .get_token_prefetched(&who, "other", prefetched)
            .await,
        Err(Error::NotFound)
    ));
    let (mut who, prefetched) = vault
        .auth
        .authenticate_reading(Some(KEY), "t")
        .await
        .unwrap();
    who.tenant_id = Uuid::from_u128(200);
    assert!(matches!(
        vault
            .tokens
            .get_token_prefetched(&who, "t", prefetched)
            .await,
        Err(Error::NotFound)
    ));
}

#[tokio::test]
async fn a_read_with_an_expired_or_unknown_key_is_unauthenticated() {
    let expired = stored_app(Uuid::from_u128(100), Some(now()));
    let card = stored("t", "/pci/high/", &json!("4242424242424242"));
    let vault = keyed_vault(keyed(expired, Some(card)), MockTokens::new());
    assert!(matches!(
        vault.auth.authenticate_reading(Some(KEY), "t").await,
        Err(Error::Unauthenticated)
    ));
    let mut apps = MockApplications::new();
    apps.expect_find_by_key_hash_also()
        .returning(|_, _, _| Ok(None));
    let vault = keyed_vault(apps, MockTokens::new());
    assert!(matches!(
        vault.auth.authenticate_reading(Some(KEY), "t").await,
        Err(Error::Unauthenticated)
    ));
    assert!(matches!(
        vault
            .auth
            .authenticate_reading(Some("not-a-key"), "t")
            .await,
        Err(Error::Unauthenticated)
    ));
}
