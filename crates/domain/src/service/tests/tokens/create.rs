//! Creating tokens: the caller's rules before any write, encryption before storage, a tenant
//! deleted meanwhile, ids taken or repeated, and deduplication races.

use serde_json::json;

use super::*;
use crate::token_new::RawNewToken;

fn raw(ty: &str, data: serde_json::Value) -> RawNewToken {
    RawNewToken {
        token_type: Some(ty.into()),
        data: Some(data),
        ..RawNewToken::default()
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
