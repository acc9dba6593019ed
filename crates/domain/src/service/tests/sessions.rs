//! Session use cases: who may start and authorize, what a session may be granted, and how its
//! authorizer caps it.

use super::*;
use crate::access::RawRule;
use crate::access::{
    AccessRule, ConditionAttribute, ConditionOperator, RawCondition, RuleCondition, RuleScope,
    TokenRef, Transform,
};
use crate::container::Container;
use crate::session::RawSessionGrant;

const NONCE: &str = "abcdefghijabcdefghijabcdefghij12";

fn caller(
    app_type: ApplicationType,
    permissions: &[Permission],
    rules: Vec<AccessRule>,
) -> Principal {
    Principal {
        app_type,
        rules,
        ..principal(permissions)
    }
}

fn keys_with_nonce() -> MockKeys {
    let mut keys = keys();
    keys.expect_generate_nonce()
        .returning(|| Nonce::parse(NONCE).unwrap());
    keys.expect_hash_nonce().returning(|_| KeyHash([9; 32]));
    keys
}

fn with_sessions(sessions: MockSessions, applications: MockApplications) -> Vault {
    let mut p = ports(MockTenants::new(), applications);
    p.keys = Arc::new(keys_with_nonce());
    p.sessions = Arc::new(sessions);
    Vault::new(p)
}

fn grant(permissions: &[&str], rules: Vec<RawRule>) -> RawSessionGrant {
    RawSessionGrant {
        nonce: Some(NONCE.into()),
        permissions: Some(permissions.iter().map(|p| (*p).to_string()).collect()),
        rules: Some(rules),
        expires_at: None,
    }
}

fn id_rule(permission: &str, transform: &str, id: &str) -> RawRule {
    RawRule {
        priority: Some(1),
        conditions: Some(vec![RawCondition {
            attribute: Some("id".into()),
            operator: Some("equals".into()),
            value: Some(id.into()),
        }]),
        transform: Some(transform.into()),
        permissions: Some(vec![permission.into()]),
        ..RawRule::default()
    }
}

#[tokio::test]
async fn only_public_applications_start_sessions() {
    let mut sessions = MockSessions::new();
    sessions
        .expect_insert()
        .withf(|s, _, nonce| {
            s.authorized_by.is_none()
                && s.expires_at == now() + Duration::minutes(3)
                && nonce.0 == [9; 32]
        })
        .times(1)
        .returning(|_, _, _| Ok(()));
    let vault = with_sessions(sessions, MockApplications::new());
    let public = caller(ApplicationType::Public, &[Permission::TokenCreate], vec![]);
    let started = vault.sessions.create_session(&public).await.unwrap();
    assert_eq!(started.nonce.expose(), NONCE);
    assert_eq!(started.session.created_by, public.application_id);
    for ty in [ApplicationType::Private, ApplicationType::Management] {
        let other = caller(ty, &[Permission::TokenRead], vec![]);
        assert!(matches!(
            vault.sessions.create_session(&other).await,
            Err(Error::Forbidden)
        ));
    }
}

#[tokio::test]
async fn authorization_grants_only_what_the_authorizer_holds() {
    let mut sessions = MockSessions::new();
    sessions
        .expect_authorize()
        .withf(|tenant, _, by, grant, _| {
            *tenant == Uuid::from_u128(100)
                && *by == Uuid::from_u128(1)
                && grant.permissions == [Permission::TokenRead]
        })
        .times(1)
        .returning(|_, _, _, _, _| Ok(Some(Uuid::from_u128(55))));
    let vault = with_sessions(sessions, MockApplications::new());
    let private = caller(ApplicationType::Private, &[Permission::TokenRead], vec![]);
    vault
        .sessions
        .authorize_session(&private, grant(&["token:read"], vec![]))
        .await
        .unwrap();
    // A permission the authorizer lacks, plainly or in a rule: 403, nothing stored.
    for g in [
        grant(&["token:use"], vec![]),
        grant(&[], vec![id_rule("token:delete", "reveal", "t")]),
    ] {
        assert!(matches!(
            vault.sessions.authorize_session(&private, g).await,
            Err(Error::Forbidden)
        ));
    }
    // Only private applications authorize; a session never does.
    let public = caller(ApplicationType::Public, &[Permission::TokenCreate], vec![]);
    let g = grant(&["token:create"], vec![]);
    assert!(matches!(
        vault.sessions.authorize_session(&public, g).await,
        Err(Error::Forbidden)
    ));
}

#[tokio::test]
async fn a_used_or_unknown_nonce_is_a_validation_error() {
    let mut sessions = MockSessions::new();
    sessions
        .expect_authorize()
        .returning(|_, _, _, _, _| Ok(None));
    let vault = with_sessions(sessions, MockApplications::new());
    let private = caller(ApplicationType::Private, &[Permission::TokenRead], vec![]);
    match vault
        .sessions
        .authorize_session(&private, grant(&["token:read"], vec![]))
        .await
    {
        Err(Error::Validation(errors)) => assert!(errors.contains("nonce")),
        other => panic!("expected 400 on nonce, got {other:?}"),
    }
}

fn authorized(session_rules: Vec<AccessRule>, authorizer: Application) -> AuthorizedSession {
    AuthorizedSession {
        session: Session {
            id: Uuid::from_u128(55),
            tenant_id: authorizer.tenant_id,
            created_by: Uuid::from_u128(3),
            authorized_by: Some(authorizer.id),
            permissions: vec![],
            rules: session_rules,
            created_at: now(),
            expires_at: now() + Duration::minutes(3),
        },
        authorizer,
        settings: TenantSettings::default(),
    }
}

#[tokio::test]
async fn a_session_key_acts_within_its_rules_capped_by_its_authorizer() {
    let reveal_one = AccessRule {
        description: None,
        priority: 1,
        scope: RuleScope::Conditions(vec![RuleCondition {
            attribute: ConditionAttribute::Id,
            operator: ConditionOperator::StartsWith,
            value: "tok".into(),
        }]),
        transform: Transform::Reveal,
        permissions: vec![Permission::TokenRead],
    };
    let mut authorizer = stored_app(Uuid::from_u128(100), None);
    // The authorizer reveals /bank/ but only masks the rest.
    authorizer.rules = vec![AccessRule {
        description: None,
        priority: 1,
        scope: RuleScope::Container(Container::parse("/bank/").unwrap()),
        transform: Transform::Reveal,
        permissions: vec![Permission::TokenRead],
    }];
    let found = authorized(vec![reveal_one], authorizer.clone());
    let mut applications = MockApplications::new();
    applications
        .expect_find_by_key_hash()
        .returning(|_| Ok(None));
    let mut sessions = MockSessions::new();
    sessions
        .expect_find_by_key_hash()
        .returning(move |_, _| Ok(Some(found.clone())));
    let vault = with_sessions(sessions, applications);
    let session = vault.auth.authenticate(Some(KEY)).await.unwrap();
    assert_eq!(session.application_id, Uuid::from_u128(55));
    assert!(session.require_application().is_err());
    assert!(!session.holds(Permission::ApplicationRead));

    let bank = Container::parse("/bank/").unwrap();
    let pci = Container::parse("/pci/").unwrap();
    let at = |id, container| TokenRef { id, container };
    let read = Permission::TokenRead;
    assert_eq!(
        session.access(at("tok-1", &bank), read),
        Some(Transform::Reveal)
    );
    // The authorizer's plain token:read masks /pci/: the session's reveal is capped.
    assert_eq!(
        session.access(at("tok-2", &pci), read),
        Some(Transform::Mask)
    );
    // The session's condition does not hold.
    assert_eq!(session.access(at("other", &bank), read), None);
    assert!(
        session
            .access(at("tok-1", &bank), Permission::TokenUse)
            .is_none()
    );
}

#[tokio::test]
async fn an_expired_authorizer_ends_its_sessions() {
    let authorizer = stored_app(Uuid::from_u128(100), Some(now() - Duration::seconds(1)));
    let found = authorized(vec![], authorizer);
    let mut applications = MockApplications::new();
    applications
        .expect_find_by_key_hash()
        .returning(|_| Ok(None));
    let mut sessions = MockSessions::new();
    sessions
        .expect_find_by_key_hash()
        .returning(move |_, _| Ok(Some(found.clone())));
    let vault = with_sessions(sessions, applications);
    assert!(matches!(
        vault.auth.authenticate(Some(KEY)).await,
        Err(Error::Unauthenticated)
    ));
}
