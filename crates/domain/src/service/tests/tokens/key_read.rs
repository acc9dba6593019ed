//! A token read beside the caller's key (`Beside::Read`) or not (`Beside::NotRead`): decided as
//! any read, standing only for its tenant and id, and never past an expired or unknown key.

use serde_json::json;

use super::*;

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
