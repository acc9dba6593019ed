//! `find_by_key_hash_also` asking for a search: an API key's application and the tokens a search matches in
//! its tenant, in one round trip where the database reads ahead (PostgreSQL), the key alone
//! otherwise (SQLite).

use time::Duration;
use tokenvault_domain::application::KeyHash;
use tokenvault_domain::permission::{ApplicationType, Permission};
use tokenvault_domain::ports::{
    AlsoRead, ApplicationRepository, Beside, KeyRead, SearchAhead, SearchCondition, TokenRepository,
};
use tokenvault_domain::tenant::TenantSettings;
use tokenvault_domain::token::StoredToken;
use tokenvault_persistence::testing::{Backend, TestDatabase, read_paths};
use tokenvault_persistence::{
    SeaOrmApplicationRepository, SeaOrmTenantRepository, SeaOrmTokenRepository,
};

use crate::common::{now, tenant_with, token};

/// The key `hash` read asking for the matches of `condition` in `tenant_id`, `limit` at most.
async fn key_and_search(
    apps: &SeaOrmApplicationRepository,
    hash: &KeyHash,
    tenant_id: uuid::Uuid,
    condition: &SearchCondition,
    limit: u64,
) -> Option<KeyRead> {
    let also = AlsoRead {
        search: Some(SearchAhead {
            tenant_id,
            condition: condition.clone(),
            limit,
        }),
        ..AlsoRead::default()
    };
    apps.find_by_key_hash_also(hash, &also, now())
        .await
        .unwrap()
}

fn holding(mut t: StoredToken, term: &str) -> StoredToken {
    t.search_terms = vec![term.into()];
    t.search_indexes = vec!["{{ data }}".into()];
    t
}

fn ids(found: &[StoredToken]) -> Vec<&str> {
    found.iter().map(|t| t.id.as_str()).collect()
}

#[tokio::test]
async fn the_key_and_its_tenants_matches_in_one_read() {
    for (backend, refused) in read_paths() {
        let db = TestDatabase::create(backend).await;
        db.db.refuse_direct_reads(refused);
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let apps = SeaOrmApplicationRepository::new(db.db.clone());
        let tokens = SeaOrmTokenRepository::new(db.db.clone());
        let private = (ApplicationType::Private, vec![Permission::TokenSearch]);
        let key = KeyHash([1; 32]);
        let (a, app) = tenant_with(&tenants, TenantSettings::default(), private, &key).await;
        let public_key = KeyHash([2; 32]);
        let mut public = app.clone();
        public.id = uuid::Uuid::now_v7();
        public.app_type = ApplicationType::Public;
        public.permissions = vec![Permission::TokenCreate];
        apps.insert(&public, &public_key).await.unwrap();
        let (b, _) = tenant_with(
            &tenants,
            TenantSettings::default(),
            (ApplicationType::Private, vec![Permission::TokenSearch]),
            &KeyHash([3; 32]),
        )
        .await;
        let old = holding(token(a, "old", "/pii/", now() - Duration::hours(1)), "T");
        let new = holding(token(a, "new", "/secret/", now()), "T");
        let mut expired = holding(token(a, "expired", "/pii/", now()), "T");
        expired.expires_at = Some(now() - Duration::seconds(1));
        let other = holding(token(a, "other", "/pii/", now()), "U");
        let theirs = holding(token(b, "theirs", "/pii/", now()), "T");
        for t in [&old, &new, &expired, &other, &theirs] {
            tokens.insert(t).await.unwrap();
        }
        let t = SearchCondition::Term("T".into());
        // Not on Citus: a statement there reaches a tenant's rows only by naming the tenant.
        let read_ahead = backend == Backend::Postgres && db.citus_workers().is_empty();

        let found = key_and_search(&apps, &key, a, &t, 10).await.unwrap();
        assert_eq!(found.application, app);
        assert_eq!(found.token, Beside::NotRead);
        assert_eq!(found.reactor, Beside::NotRead);
        match found.matches {
            Beside::Read(found) => {
                assert!(read_ahead, "{backend:?} reads the key alone");
                assert_eq!(
                    ids(&found),
                    ["new", "old"],
                    "every live match of the tenant, newest first, whatever its container"
                );
            }
            Beside::NotRead => assert!(!read_ahead, "{backend:?} reads ahead"),
        }

        // More matches than the limit: the key alone, the search is the use case's.
        let over = key_and_search(&apps, &key, a, &t, 1).await.unwrap();
        assert_eq!(over.application, app);
        assert!(
            over.matches == Beside::NotRead,
            "{backend:?}: over the limit"
        );

        // Hashed for another tenant than the key's: nothing of either is read.
        let elsewhere = key_and_search(&apps, &key, b, &t, 10).await.unwrap();
        assert_eq!(elsewhere.application, app);
        assert!(
            elsewhere.matches == Beside::NotRead,
            "{backend:?}: another tenant"
        );

        // A public key never makes the server read a token.
        let public = key_and_search(&apps, &public_key, a, &t, 10).await.unwrap();
        assert!(
            public.matches == Beside::NotRead,
            "{backend:?}: a public key"
        );

        assert!(
            key_and_search(&apps, &KeyHash([9; 32]), a, &t, 10)
                .await
                .is_none(),
            "an unknown key finds nothing"
        );
        db.destroy().await;
    }
}
