//! `find_by_key_hash_also` asking for a token: an API key's application and one of its
//! tenant's tokens in one round trip, on SQLite and PostgreSQL.

use time::Duration;
use tokenvault_domain::application::{Application, KeyHash};
use tokenvault_domain::permission::{ApplicationType, Permission};
use tokenvault_domain::ports::{ApplicationRepository, Beside, TenantRepository, TokenRepository};
use tokenvault_domain::tenant::{Tenant, TenantSettings};
use tokenvault_persistence::testing::{TestDatabase, read_paths};
use tokenvault_persistence::{
    SeaOrmApplicationRepository, SeaOrmTenantRepository, SeaOrmTokenRepository,
};
use uuid::Uuid;

use crate::common::{beside, key_and_token, now, token};

/// A tenant whose one private application holds the key hashed to `[n; 32]`.
async fn tenant_with_key(
    tenants: &SeaOrmTenantRepository,
    n: u8,
    settings: TenantSettings,
) -> (Uuid, Application) {
    tenant_with(tenants, n, settings, ApplicationType::Private).await
}

/// A tenant whose one application, of `app_type`, holds the key hashed to `[n; 32]`.
async fn tenant_with(
    tenants: &SeaOrmTenantRepository,
    n: u8,
    settings: TenantSettings,
    app_type: ApplicationType,
) -> (Uuid, Application) {
    let t = Tenant {
        id: Uuid::now_v7(),
        owner_id: Uuid::new_v4(),
        name: format!("t{n}"),
        settings,
        created_by: None,
        created_at: now(),
        modified_by: None,
        modified_at: None,
    };
    let app = Application {
        id: Uuid::now_v7(),
        tenant_id: t.id,
        name: "reader".into(),
        app_type,
        permissions: if app_type == ApplicationType::Private {
            vec![Permission::TokenRead]
        } else {
            vec![Permission::TokenCreate]
        },
        rules: vec![],
        created_by: None,
        created_at: now(),
        modified_by: None,
        modified_at: None,
        expires_at: Some(now() + Duration::hours(1)),
    };
    tenants
        .create_with_application(&t, &[1], &app, &KeyHash([n; 32]))
        .await
        .unwrap();
    (t.id, app)
}

#[tokio::test]
async fn the_key_and_its_tenants_token_in_one_read() {
    for (backend, refused) in read_paths() {
        let db = TestDatabase::create(backend).await;
        db.db.refuse_direct_reads(refused);
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let apps = SeaOrmApplicationRepository::new(db.db.clone());
        let tokens = SeaOrmTokenRepository::new(db.db.clone());
        let settings = TenantSettings {
            fingerprint_tokens: true,
            deduplicate_tokens: true,
        };
        let (a, app_a) = tenant_with_key(&tenants, 1, settings).await;
        let (b, _) = tenant_with_key(&tenants, 2, TenantSettings::default()).await;
        let mine = token(a, "shared-id", "/mine/", now());
        let theirs = token(b, "shared-id", "/theirs/", now());
        let only_theirs = token(b, "only-b", "/theirs/", now());
        let mut expiring = token(a, "expiring", "/mine/", now());
        expiring.expires_at = Some(now() + Duration::seconds(30));
        for t in [&mine, &theirs, &only_theirs, &expiring] {
            tokens.insert(t).await.unwrap();
        }
        let key = KeyHash([1; 32]);

        let found = key_and_token(&apps, &key, "shared-id", now())
            .await
            .unwrap();
        assert_eq!(found.application, app_a);
        assert_eq!(found.settings, settings);
        // Not on Citus: a statement there reaches a tenant's rows only by naming the tenant.
        let ahead = !refused && db.citus_workers().is_empty();
        assert_eq!(
            found.token,
            beside(ahead, Some(mine.clone())),
            "{backend:?}: its own tenant's row"
        );

        let other = key_and_token(&apps, &key, "only-b", now()).await.unwrap();
        assert_eq!(
            other.application, app_a,
            "the key is found without the token"
        );
        assert_eq!(
            other.token,
            beside(ahead, None),
            "{backend:?}: never another tenant's token"
        );

        let live = key_and_token(&apps, &key, "expiring", now()).await.unwrap();
        assert_eq!(live.token, beside(ahead, Some(expiring.clone())));
        let later = now() + Duration::seconds(31);
        let gone = key_and_token(&apps, &key, "expiring", later).await.unwrap();
        assert_eq!(
            gone.token,
            beside(ahead, None),
            "{backend:?}: an expired token is not read"
        );

        assert!(
            key_and_token(&apps, &KeyHash([9; 32]), "shared-id", now())
                .await
                .is_none(),
            "an unknown key finds nothing, whatever the token"
        );
        db.destroy().await;
    }
}

/// Only a private application may read tokens: another type's key never reads one.
#[tokio::test]
async fn a_public_key_reads_no_token() {
    for (backend, refused) in read_paths() {
        let db = TestDatabase::create(backend).await;
        db.db.refuse_direct_reads(refused);
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let apps = SeaOrmApplicationRepository::new(db.db.clone());
        let tokens = SeaOrmTokenRepository::new(db.db.clone());
        let (a, public) = tenant_with(
            &tenants,
            3,
            TenantSettings::default(),
            ApplicationType::Public,
        )
        .await;
        tokens.insert(&token(a, "t", "/", now())).await.unwrap();
        let found = key_and_token(&apps, &KeyHash([3; 32]), "t", now())
            .await
            .unwrap();
        assert_eq!(found.application, public);
        assert_eq!(found.token, Beside::NotRead, "{backend:?}");
        db.destroy().await;
    }
}

/// Reads made at once (PostgreSQL answers them in shared statements, `postgres/key_group.rs`): each
/// gets its own key's application and its own tenant's token, never a neighbour's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_reads_each_get_their_own_answer() {
    for (backend, refused) in read_paths() {
        let db = TestDatabase::create(backend).await;
        db.db.refuse_direct_reads(refused);
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let apps = std::sync::Arc::new(SeaOrmApplicationRepository::new(db.db.clone()));
        let tokens = SeaOrmTokenRepository::new(db.db.clone());
        // Not on Citus: a statement there reaches a tenant's rows only by naming the tenant.
        let ahead = !refused && db.citus_workers().is_empty();
        let (a, app_a) = tenant_with_key(&tenants, 4, TenantSettings::default()).await;
        let settings_b = TenantSettings {
            fingerprint_tokens: true,
            deduplicate_tokens: false,
        };
        let (b, app_b) = tenant_with_key(&tenants, 5, settings_b).await;
        // A public key (never reads a token, even one its tenant holds) and a deleted
        // tenant's key.
        let (_, public_a) = tenant_with(
            &tenants,
            6,
            TenantSettings::default(),
            ApplicationType::Public,
        )
        .await;
        let (gone, _) = tenant_with_key(&tenants, 7, TenantSettings::default()).await;
        let mine = token(a, "same", "/a/", now());
        let theirs = token(b, "same", "/b/", now());
        let only_b = token(b, "only-b", "/b/", now());
        let mut expiring = token(a, "expiring", "/a/", now());
        expiring.expires_at = Some(now() + Duration::seconds(30));
        let public_token = token(public_a.tenant_id, "same", "/a/", now());
        let gone_token = token(gone, "same", "/gone/", now());
        for t in [
            &mine,
            &theirs,
            &only_b,
            &expiring,
            &public_token,
            &gone_token,
        ] {
            tokens.insert(t).await.unwrap();
        }
        assert!(tenants.delete(gone, now()).await.unwrap());
        // (key, token asked, time, expected application, expected token)
        let later = now() + Duration::seconds(31);
        let cases = [
            (4, Some("same"), now(), Some(&app_a), Some(&mine)),
            (5, Some("same"), now(), Some(&app_b), Some(&theirs)),
            (4, Some("only-b"), now(), Some(&app_a), None),
            (5, Some("only-b"), now(), Some(&app_b), Some(&only_b)),
            (4, Some("expiring"), now(), Some(&app_a), Some(&expiring)),
            (4, Some("expiring"), later, Some(&app_a), None),
            (9, Some("same"), now(), None, None),
            (6, Some("same"), now(), Some(&public_a), None),
            (7, Some("same"), now(), None, None),
            (4, None, now(), Some(&app_a), None),
            (5, None, now(), Some(&app_b), None),
            (9, None, now(), None, None),
        ];
        let mut reads = tokio::task::JoinSet::new();
        for round in 0..40 {
            for (i, (key, asked, at, _, _)) in cases.iter().enumerate() {
                let apps = apps.clone();
                let (key, asked, at) = (*key, asked.map(str::to_owned), *at);
                reads.spawn(async move {
                    let hash = KeyHash([key; 32]);
                    let found = match asked {
                        Some(id) => key_and_token(&*apps, &hash, &id, at)
                            .await
                            .map(|k| (k.application, k.settings, k.token)),
                        None => apps
                            .find_by_key_hash(&hash)
                            .await
                            .unwrap()
                            .map(|(app, settings)| (app, settings, Beside::NotRead)),
                    };
                    (round, i, found)
                });
            }
        }
        let mut answered = 0;
        while let Some(done) = reads.join_next().await {
            let (round, i, found) = done.unwrap();
            let (_, asked, _, app, tok) = cases[i];
            let asked = asked.is_some();
            let what = format!("{backend:?}, round {round}, case {i}");
            match (found, app) {
                (None, None) => {}
                (Some((got_app, settings, got_token)), Some(app)) => {
                    assert_eq!(&got_app, app, "{what}");
                    let expected = if app.tenant_id == b {
                        settings_b
                    } else {
                        TenantSettings::default()
                    };
                    assert_eq!(settings, expected, "{what}");
                    let read = ahead && app.app_type == ApplicationType::Private && asked;
                    assert_eq!(got_token, beside(read, tok.cloned()), "{what}");
                }
                (found, app) => panic!("{what}: found {found:?}, expected {app:?}"),
            }
            answered += 1;
        }
        assert_eq!(answered, 40 * cases.len());
        db.destroy().await;
    }
}
