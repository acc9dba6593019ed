//! `find_by_key_hash_also` asking for a reactor: an API key's application, one of its tenant's
//! reactors with its formula and the token a call names, in one round trip, on SQLite and
//! PostgreSQL.

use serde_json::json;
use time::Duration;
use tokenvault_domain::application::{Application, KeyHash};
use tokenvault_domain::formula::{Formula, ParamType, RequestParameter};
use tokenvault_domain::permission::{ApplicationType, Permission};
use tokenvault_domain::ports::{
    AlsoRead, ApplicationRepository, Beside, FormulaRepository, KeyRead, ReactorRepository,
    TokenRepository,
};
use tokenvault_domain::reactor::Reactor;
use tokenvault_domain::tenant::TenantSettings;
use tokenvault_persistence::testing::{TestDatabase, read_paths};
use tokenvault_persistence::{
    SeaOrmApplicationRepository, SeaOrmFormulaRepository, SeaOrmReactorRepository,
    SeaOrmTenantRepository, SeaOrmTokenRepository,
};
use uuid::Uuid;

use crate::common::{beside, now, tenant_with, token};

/// The key `hash` read asking for reactor `reactor` and, given one, token `token`.
pub(crate) async fn key_and_reactor(
    apps: &SeaOrmApplicationRepository,
    hash: &KeyHash,
    reactor: Uuid,
    token: Option<String>,
    at: time::OffsetDateTime,
) -> Option<KeyRead> {
    let also = AlsoRead {
        token,
        reactor: Some(reactor),
        search: None,
    };
    apps.find_by_key_hash_also(hash, &also, at).await.unwrap()
}

pub(crate) fn formula(tenant_id: Uuid, code: &str) -> Formula {
    Formula {
        id: Uuid::now_v7(),
        tenant_id,
        name: "charge".into(),
        description: None,
        formula_type: "private".into(),
        code: code.into(),
        configuration: vec![],
        request_parameters: vec![RequestParameter {
            name: "card".into(),
            description: None,
            param_type: ParamType::String,
            optional: false,
        }],
        created_by: None,
        created_at: now(),
        modified_by: None,
        modified_at: None,
        status: None,
    }
}

pub(crate) fn reactor(tenant_id: Uuid, formula_id: Uuid) -> Reactor {
    Reactor {
        id: Uuid::now_v7(),
        tenant_id,
        name: "charger".into(),
        formula_id,
        configuration: json!({"region": "eu"}).as_object().unwrap().clone(),
        application_id: None,
        created_by: None,
        created_at: now(),
        modified_by: None,
        modified_at: None,
    }
}

#[tokio::test]
async fn the_key_and_its_tenants_reactor_with_its_formula_in_one_read() {
    for (backend, refused) in read_paths() {
        let db = TestDatabase::create(backend).await;
        db.db.refuse_direct_reads(refused);
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let apps = SeaOrmApplicationRepository::new(db.db.clone());
        let formulas = SeaOrmFormulaRepository::new(db.db.clone());
        let reactors = SeaOrmReactorRepository::new(db.db.clone());
        let private = (ApplicationType::Private, vec![Permission::TokenUse]);
        let settings = TenantSettings {
            fingerprint_tokens: false,
            deduplicate_tokens: true,
        };
        let (a, app_a): (Uuid, Application) =
            tenant_with(&tenants, settings, private.clone(), &KeyHash([1; 32])).await;
        let (b, _) = tenant_with(
            &tenants,
            TenantSettings::default(),
            private,
            &KeyHash([2; 32]),
        )
        .await;
        let fa = formula(a, "module.exports = () => ({ raw: 'a' });");
        let fb = formula(b, "module.exports = () => ({ raw: 'b' });");
        formulas.insert(&fa).await.unwrap();
        formulas.insert(&fb).await.unwrap();
        let ra = reactor(a, fa.id);
        let rb = reactor(b, fb.id);
        reactors.insert(&ra).await.unwrap();
        reactors.insert(&rb).await.unwrap();
        let key_a = KeyHash([1; 32]);

        let found = key_and_reactor(&apps, &key_a, ra.id, None, now())
            .await
            .unwrap();
        assert_eq!(found.application, app_a);
        assert!(found.settings.deduplicate_tokens);
        assert!(!found.settings.fingerprint_tokens);
        // Not on Citus: a statement there reaches a tenant's rows only by naming the tenant.
        let ahead = !refused && db.citus_workers().is_empty();
        assert_eq!(
            found.reactor,
            beside(ahead, Some((ra.clone(), Some(fa.clone()))))
        );
        assert_eq!(found.token, Beside::NotRead, "no token asked for");

        // Another tenant's reactor is never read with this key: the key's application alone.
        let found = key_and_reactor(&apps, &key_a, rb.id, None, now())
            .await
            .unwrap();
        assert_eq!(found.application.id, app_a.id);
        assert_eq!(found.reactor, beside(ahead, None));

        // An id that is no reactor (a formula's): none.
        let found = key_and_reactor(&apps, &key_a, fa.id, None, now())
            .await
            .unwrap();
        assert_eq!(found.reactor, beside(ahead, None));

        // An unknown key finds nothing at all.
        assert!(
            key_and_reactor(&apps, &KeyHash([9; 32]), ra.id, None, now())
                .await
                .is_none()
        );

        // The other key reads its own.
        let found = key_and_reactor(&apps, &KeyHash([2; 32]), rb.id, None, now())
            .await
            .unwrap();
        assert_eq!(found.reactor, beside(ahead, Some((rb, Some(fb)))));

        // A public key, which may not use tokens, never makes the server read a reactor.
        let public = (ApplicationType::Public, vec![Permission::TokenCreate]);
        let (c, _) = tenant_with(
            &tenants,
            TenantSettings::default(),
            public,
            &KeyHash([3; 32]),
        )
        .await;
        let fc = formula(c, "module.exports = () => ({ raw: 'c' });");
        formulas.insert(&fc).await.unwrap();
        let rc = reactor(c, fc.id);
        reactors.insert(&rc).await.unwrap();
        let found = key_and_reactor(&apps, &KeyHash([3; 32]), rc.id, None, now())
            .await
            .unwrap();
        assert_eq!(found.application.app_type, ApplicationType::Public);
        assert_eq!(found.reactor, Beside::NotRead);
        db.destroy().await;
    }
}

#[tokio::test]
async fn the_token_a_call_names_is_read_with_the_key_from_its_tenant_only() {
    for (backend, refused) in read_paths() {
        let db = TestDatabase::create(backend).await;
        db.db.refuse_direct_reads(refused);
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let apps = SeaOrmApplicationRepository::new(db.db.clone());
        let formulas = SeaOrmFormulaRepository::new(db.db.clone());
        let reactors = SeaOrmReactorRepository::new(db.db.clone());
        let tokens = SeaOrmTokenRepository::new(db.db.clone());
        let private = (ApplicationType::Private, vec![Permission::TokenUse]);
        let (a, _) = tenant_with(
            &tenants,
            TenantSettings::default(),
            private.clone(),
            &KeyHash([1; 32]),
        )
        .await;
        let (b, _) = tenant_with(
            &tenants,
            TenantSettings::default(),
            private,
            &KeyHash([2; 32]),
        )
        .await;
        let public = (ApplicationType::Public, vec![Permission::TokenCreate]);
        let (c, _) = tenant_with(
            &tenants,
            TenantSettings::default(),
            public,
            &KeyHash([3; 32]),
        )
        .await;
        let fa = formula(a, "module.exports = () => ({ raw: 'a' });");
        formulas.insert(&fa).await.unwrap();
        let ra = reactor(a, fa.id);
        reactors.insert(&ra).await.unwrap();
        let mine = token(a, "shared-id", "/mine/", now());
        let theirs = token(b, "shared-id", "/theirs/", now());
        let only_theirs = token(b, "only-b", "/theirs/", now());
        let publics = token(c, "of-c", "/c/", now());
        let mut expiring = token(a, "expiring", "/mine/", now());
        expiring.expires_at = Some(now() + Duration::seconds(30));
        for t in [&mine, &theirs, &only_theirs, &publics, &expiring] {
            tokens.insert(t).await.unwrap();
        }
        let key_a = KeyHash([1; 32]);
        let read = |key: KeyHash, reactor: Uuid, id: &str, at| {
            let apps = &apps;
            let id = id.to_owned();
            async move {
                key_and_reactor(apps, &key, reactor, Some(id), at)
                    .await
                    .unwrap()
            }
        };

        // Not on Citus: a statement there reaches a tenant's rows only by naming the tenant.
        let ahead = !refused && db.citus_workers().is_empty();
        let with_formula = beside(ahead, Some((ra.clone(), Some(fa.clone()))));
        let found = read(key_a, ra.id, "shared-id", now()).await;
        assert_eq!(found.reactor, with_formula);
        assert_eq!(
            found.token,
            beside(ahead, Some(mine.clone())),
            "{backend:?}: its own row"
        );

        let found = read(key_a, ra.id, "only-b", now()).await;
        assert_eq!(found.reactor, with_formula);
        assert_eq!(
            found.token,
            beside(ahead, None),
            "{backend:?}: never another tenant's"
        );

        // Without the reactor (none by that id), the token is still the key's tenant's.
        let found = read(key_a, Uuid::now_v7(), "shared-id", now()).await;
        assert_eq!(found.reactor, beside(ahead, None));
        assert_eq!(found.token, beside(ahead, Some(mine.clone())));

        let found = read(key_a, ra.id, "expiring", now()).await;
        assert_eq!(found.token, beside(ahead, Some(expiring.clone())));
        let later = now() + Duration::seconds(31);
        let found = read(key_a, ra.id, "expiring", later).await;
        assert_eq!(
            found.token,
            beside(ahead, None),
            "{backend:?}: an expired token is not read"
        );
        assert_eq!(found.reactor, with_formula);

        // The other private key reads its own tenant's row by the same id.
        let found = read(KeyHash([2; 32]), ra.id, "shared-id", now()).await;
        assert_eq!(found.reactor, beside(ahead, None));
        assert_eq!(found.token, beside(ahead, Some(theirs.clone())));

        // A public key, which may not use tokens, never makes the server read one.
        let found = read(KeyHash([3; 32]), ra.id, "of-c", now()).await;
        assert_eq!(found.application.app_type, ApplicationType::Public);
        assert_eq!(
            found.token,
            Beside::NotRead,
            "{backend:?}: a public key reads no token"
        );
        db.destroy().await;
    }
}
