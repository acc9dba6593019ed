//! Session repository contract: the same stories on SQLite and PostgreSQL, fresh database each.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use time::{Duration, OffsetDateTime};
use tokenvault_domain::RepoError;
use tokenvault_domain::access::{
    AccessRule, ConditionAttribute, ConditionOperator, RuleCondition, RuleScope, Transform,
};
use tokenvault_domain::application::{Application, KeyHash};
use tokenvault_domain::permission::{ApplicationType, Permission};
use tokenvault_domain::ports::{ApplicationRepository, SessionRepository, TenantRepository};
use tokenvault_domain::session::{Session, SessionGrant};
use tokenvault_domain::tenant::TenantSettings;
use tokenvault_persistence::testing::{TestDatabase, backends};
use tokenvault_persistence::{
    SeaOrmApplicationRepository, SeaOrmSessionRepository, SeaOrmTenantRepository,
};
use uuid::Uuid;

mod common;

use common::{now, tenant};

struct Repos {
    tenants: SeaOrmTenantRepository,
    apps: SeaOrmApplicationRepository,
    sessions: SeaOrmSessionRepository,
    tenant: Uuid,
    /// Settings of the tenant, deliberately not the defaults.
    settings: TenantSettings,
    /// A public application of the tenant (starts sessions).
    creator: Application,
    /// A private application of the tenant (authorizes them).
    authorizer: Application,
}

async fn each_backend<F, Fut>(story: F)
where
    F: Fn(Repos) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for backend in backends() {
        let db = TestDatabase::create(backend).await;
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let tenant = tenant(&tenants).await;
        let mut stored = tenants.get(tenant).await.unwrap().unwrap();
        stored.settings.fingerprint_tokens = !stored.settings.fingerprint_tokens;
        stored.settings.deduplicate_tokens = !stored.settings.deduplicate_tokens;
        assert!(tenants.update(&stored).await.unwrap());
        let apps = SeaOrmApplicationRepository::new(db.db.clone());
        let creator = application(tenant, ApplicationType::Public);
        let authorizer = application(tenant, ApplicationType::Private);
        apps.insert(&creator, &hash()).await.unwrap();
        apps.insert(&authorizer, &hash()).await.unwrap();
        story(Repos {
            tenants,
            apps,
            sessions: SeaOrmSessionRepository::new(db.db.clone()),
            tenant,
            settings: stored.settings,
            creator,
            authorizer,
        })
        .await;
        db.destroy().await;
    }
}

fn application(tenant_id: Uuid, app_type: ApplicationType) -> Application {
    let permissions = match app_type {
        ApplicationType::Private => vec![Permission::TokenRead, Permission::TokenUse],
        _ => vec![Permission::TokenCreate],
    };
    Application {
        id: Uuid::now_v7(),
        tenant_id,
        name: format!("{} app", app_type.as_str()),
        app_type,
        permissions,
        rules: vec![],
        created_by: None,
        created_at: now(),
        modified_by: None,
        modified_at: None,
        expires_at: None,
    }
}

/// A fresh, random hash.
fn hash() -> KeyHash {
    let mut h = [0u8; 32];
    h[..16].copy_from_slice(Uuid::new_v4().as_bytes());
    h[16..].copy_from_slice(Uuid::new_v4().as_bytes());
    KeyHash(h)
}

/// A new, unauthorized session started by `creator` at `created_at`, living three minutes.
fn session(tenant_id: Uuid, creator: Uuid, created_at: OffsetDateTime) -> Session {
    Session {
        id: Uuid::now_v7(),
        tenant_id,
        created_by: creator,
        authorized_by: None,
        permissions: vec![],
        rules: vec![],
        created_at,
        expires_at: created_at + Duration::minutes(3),
    }
}

/// A grant with a plain permission and a condition rule.
fn grant(expires_at: Option<OffsetDateTime>) -> SessionGrant {
    SessionGrant {
        permissions: vec![Permission::TokenUse],
        rules: vec![AccessRule {
            description: Some("one card".into()),
            priority: 1,
            scope: RuleScope::Conditions(vec![
                RuleCondition {
                    attribute: ConditionAttribute::Id,
                    operator: ConditionOperator::Equals,
                    value: "Tok-123".into(),
                },
                RuleCondition {
                    attribute: ConditionAttribute::Container,
                    operator: ConditionOperator::StartsWith,
                    value: "/pci/".into(),
                },
            ]),
            transform: Transform::Reveal,
            permissions: vec![Permission::TokenRead],
        }],
        expires_at,
    }
}

/// Stores a new session of `r.creator` created at `at`; its key and nonce hashes.
async fn start(r: &Repos, at: OffsetDateTime) -> (Session, KeyHash, KeyHash) {
    let s = session(r.tenant, r.creator.id, at);
    let (key, nonce) = (hash(), hash());
    r.sessions.insert(&s, &key, &nonce).await.unwrap();
    (s, key, nonce)
}

#[tokio::test]
async fn a_nonce_authorizes_once_and_the_key_then_finds_the_grant() {
    each_backend(|r| async move {
        let t = now();
        let (s, key, nonce) = start(&r, t).await;
        let g = grant(None);
        // Not usable before authorization.
        assert!(
            r.sessions
                .find_by_key_hash(&key, t)
                .await
                .unwrap()
                .is_none()
        );
        // Another tenant's nonce, or an unknown one, authorizes nothing.
        for (tenant, n) in [(Uuid::now_v7(), &nonce), (r.tenant, &hash())] {
            assert!(
                r.sessions
                    .authorize(tenant, n, r.authorizer.id, &g, t)
                    .await
                    .unwrap()
                    .is_none()
            );
        }
        assert!(
            r.sessions
                .find_by_key_hash(&key, t)
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            r.sessions
                .authorize(r.tenant, &nonce, r.authorizer.id, &g, t)
                .await
                .unwrap()
                .is_some()
        );
        let found = r.sessions.find_by_key_hash(&key, t).await.unwrap().unwrap();
        assert_eq!(
            found.session,
            Session {
                authorized_by: Some(r.authorizer.id),
                permissions: g.permissions.clone(),
                rules: g.rules.clone(),
                ..s.clone()
            }
        );
        assert_eq!(found.authorizer, r.authorizer);
        assert_eq!(found.settings, r.settings);
        // The nonce is single use, even with another grant.
        let other = SessionGrant {
            permissions: vec![Permission::TokenRead],
            rules: vec![],
            expires_at: None,
        };
        assert!(
            r.sessions
                .authorize(r.tenant, &nonce, r.authorizer.id, &other, t)
                .await
                .unwrap()
                .is_none()
        );
        let again = r.sessions.find_by_key_hash(&key, t).await.unwrap().unwrap();
        assert_eq!(again.session.permissions, g.permissions);
        // The nonce hash is gone from the row; the key hash still identifies it.
        assert!(
            r.sessions
                .find_by_key_hash(&nonce, t)
                .await
                .unwrap()
                .is_none()
        );
        // An unknown key finds nothing.
        assert!(
            r.sessions
                .find_by_key_hash(&hash(), t)
                .await
                .unwrap()
                .is_none()
        );
    })
    .await;
}

#[tokio::test]
async fn keys_and_nonces_are_unique() {
    each_backend(|r| async move {
        let t = now();
        let (_, key, nonce) = start(&r, t).await;
        let twin = session(r.tenant, r.creator.id, t);
        for (k, n) in [(&key, &hash()), (&hash(), &nonce)] {
            let err = r.sessions.insert(&twin, k, n).await.unwrap_err();
            assert!(matches!(err, RepoError::Conflict(_)), "{err:?}");
        }
        // A used nonce (null) does not collide with another used one.
        let (_, _, second_nonce) = start(&r, t).await;
        let g = grant(None);
        for n in [&nonce, &second_nonce] {
            assert!(
                r.sessions
                    .authorize(r.tenant, n, r.authorizer.id, &g, t)
                    .await
                    .unwrap()
                    .is_some()
            );
        }
    })
    .await;
}

#[tokio::test]
async fn expired_sessions_are_neither_authorized_nor_found_and_are_swept() {
    each_backend(|r| async move {
        let t0 = now();
        let after_default = t0 + Duration::minutes(4);
        // Expired before authorization: the nonce is useless.
        let (_, late_key, late_nonce) = start(&r, t0).await;
        assert!(
            r.sessions
                .authorize(
                    r.tenant,
                    &late_nonce,
                    r.authorizer.id,
                    &grant(None),
                    after_default
                )
                .await
                .unwrap()
                .is_none()
        );
        // Exactly at `expires_at` is expired too.
        assert!(
            r.sessions
                .authorize(
                    r.tenant,
                    &late_nonce,
                    r.authorizer.id,
                    &grant(None),
                    t0 + Duration::minutes(3)
                )
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            r.sessions
                .find_by_key_hash(&late_key, t0)
                .await
                .unwrap()
                .is_none()
        );
        // Authorized with the creation's lifetime: found until then only.
        let (kept, kept_key, kept_nonce) = start(&r, t0).await;
        assert!(
            r.sessions
                .authorize(r.tenant, &kept_nonce, r.authorizer.id, &grant(None), t0)
                .await
                .unwrap()
                .is_some()
        );
        let found = r.sessions.find_by_key_hash(&kept_key, t0).await.unwrap();
        assert_eq!(found.unwrap().session.expires_at, kept.expires_at);
        assert!(
            r.sessions
                .find_by_key_hash(&kept_key, kept.expires_at)
                .await
                .unwrap()
                .is_none()
        );
        // Authorized with a later end of life: found after the original one, until the new.
        let (_, long_key, long_nonce) = start(&r, t0).await;
        let until = t0 + Duration::minutes(10);
        assert!(
            r.sessions
                .authorize(
                    r.tenant,
                    &long_nonce,
                    r.authorizer.id,
                    &grant(Some(until)),
                    t0
                )
                .await
                .unwrap()
                .is_some()
        );
        let found = r
            .sessions
            .find_by_key_hash(&long_key, after_default)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.session.expires_at, until);
        assert!(
            r.sessions
                .find_by_key_hash(&long_key, until)
                .await
                .unwrap()
                .is_none()
        );
        // The sweep takes the two expired sessions and leaves the extended one.
        assert_eq!(r.sessions.delete_expired(t0).await.unwrap(), 0);
        assert_eq!(r.sessions.delete_expired(after_default).await.unwrap(), 2);
        assert_eq!(r.sessions.delete_expired(after_default).await.unwrap(), 0);
        assert!(
            r.sessions
                .find_by_key_hash(&long_key, after_default)
                .await
                .unwrap()
                .is_some()
        );
        assert_eq!(r.sessions.delete_expired(until).await.unwrap(), 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_authorizations_of_one_nonce_succeed_once() {
    each_backend(|r| async move {
        let t = now();
        let (_, key, nonce) = start(&r, t).await;
        let mut calls = tokio::task::JoinSet::new();
        for i in 0..8u32 {
            let sessions = r.sessions.clone();
            let (tenant, authorizer) = (r.tenant, r.authorizer.id);
            // Each caller grants something different, to tell whose grant is stored.
            let mut g = grant(None);
            g.rules[0].priority = i + 1;
            calls.spawn(async move {
                let won = sessions
                    .authorize(tenant, &nonce, authorizer, &g, t)
                    .await
                    .unwrap()
                    .is_some();
                (won, i + 1)
            });
        }
        let results = calls.join_all().await;
        let winners: Vec<u32> = results
            .iter()
            .filter(|(won, _)| *won)
            .map(|r| r.1)
            .collect();
        assert_eq!(winners.len(), 1, "{results:?}");
        let found = r.sessions.find_by_key_hash(&key, t).await.unwrap().unwrap();
        assert_eq!(found.session.rules[0].priority, winners[0]);
    })
    .await;
}

#[tokio::test]
async fn deleting_either_application_ends_the_session() {
    each_backend(|r| async move {
        let t = now();
        let g = grant(None);
        let (_, key, nonce) = start(&r, t).await;
        assert!(
            r.sessions
                .authorize(r.tenant, &nonce, r.authorizer.id, &g, t)
                .await
                .unwrap()
                .is_some()
        );
        assert!(
            r.sessions
                .find_by_key_hash(&key, t)
                .await
                .unwrap()
                .is_some()
        );
        assert!(r.apps.delete(r.tenant, r.authorizer.id).await.unwrap());
        assert!(
            r.sessions
                .find_by_key_hash(&key, t)
                .await
                .unwrap()
                .is_none()
        );
        // The row went with it: nothing is left to sweep.
        assert_eq!(
            r.sessions
                .delete_expired(t + Duration::hours(1))
                .await
                .unwrap(),
            0
        );

        // Deleting the creator ends its sessions too.
        let authorizer = application(r.tenant, ApplicationType::Private);
        r.apps.insert(&authorizer, &hash()).await.unwrap();
        let (_, key, nonce) = start(&r, t).await;
        assert!(
            r.sessions
                .authorize(r.tenant, &nonce, authorizer.id, &g, t)
                .await
                .unwrap()
                .is_some()
        );
        assert!(r.apps.delete(r.tenant, r.creator.id).await.unwrap());
        assert!(
            r.sessions
                .find_by_key_hash(&key, t)
                .await
                .unwrap()
                .is_none()
        );
        assert_eq!(
            r.sessions
                .delete_expired(t + Duration::hours(1))
                .await
                .unwrap(),
            0
        );

        // And deleting the tenant ends every session.
        let creator = application(r.tenant, ApplicationType::Public);
        r.apps.insert(&creator, &hash()).await.unwrap();
        let s = session(r.tenant, creator.id, t);
        r.sessions.insert(&s, &hash(), &hash()).await.unwrap();
        assert!(common::delete_tenant(&r.tenants, r.tenant).await);
        assert_eq!(
            r.sessions
                .delete_expired(t + Duration::hours(1))
                .await
                .unwrap(),
            0
        );
    })
    .await;
}
