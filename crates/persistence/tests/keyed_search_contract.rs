//! `find_by_key_hash_with_search`: an API key's application and the tokens a search matches in
//! its tenant, in one round trip where the database reads ahead (PostgreSQL), the key alone
//! otherwise (SQLite).

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use time::Duration;
use tokenvault_domain::application::KeyHash;
use tokenvault_domain::permission::{ApplicationType, Permission};
use tokenvault_domain::ports::{ApplicationRepository, SearchCondition, TokenRepository};
use tokenvault_domain::tenant::TenantSettings;
use tokenvault_domain::token::StoredToken;
use tokenvault_persistence::testing::{Backend, TestDatabase, read_paths};
use tokenvault_persistence::{
    SeaOrmApplicationRepository, SeaOrmTenantRepository, SeaOrmTokenRepository,
};

mod common;

use common::{now, tenant_with, token};

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

        let found = apps
            .find_by_key_hash_with_search(&key, a, &t, 10, now())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.application, app);
        match found.tokens {
            Some(found) => {
                assert!(read_ahead, "{backend:?} reads the key alone");
                assert_eq!(
                    ids(&found),
                    ["new", "old"],
                    "every live match of the tenant, newest first, whatever its container"
                );
            }
            None => assert!(!read_ahead, "{backend:?} reads ahead"),
        }

        // More matches than the limit: the key alone, the search is the use case's.
        let over = apps
            .find_by_key_hash_with_search(&key, a, &t, 1, now())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(over.application, app);
        assert!(over.tokens.is_none(), "{backend:?}: over the limit");

        // Hashed for another tenant than the key's: nothing of either is read.
        let elsewhere = apps
            .find_by_key_hash_with_search(&key, b, &t, 10, now())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(elsewhere.application, app);
        assert!(elsewhere.tokens.is_none(), "{backend:?}: another tenant");

        // A public key never makes the server read a token.
        let public = apps
            .find_by_key_hash_with_search(&public_key, a, &t, 10, now())
            .await
            .unwrap()
            .unwrap();
        assert!(public.tokens.is_none(), "{backend:?}: a public key");

        assert!(
            apps.find_by_key_hash_with_search(&KeyHash([9; 32]), a, &t, 10, now())
                .await
                .unwrap()
                .is_none(),
            "an unknown key finds nothing"
        );
        db.destroy().await;
    }
}
