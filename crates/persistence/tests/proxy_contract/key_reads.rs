//! Reads by key hash: a proxy found in any tenant, and with it the tokens its caller may use
//! of its own tenant.

use time::Duration;
use tokenvault_domain::application::KeyHash;
use tokenvault_domain::ports::{Beside, ProxyRepository, StoredProxy, TokenRepository};
use tokenvault_persistence::testing::{TestDatabase, read_paths};
use tokenvault_persistence::{
    SeaOrmProxyRepository, SeaOrmTenantRepository, SeaOrmTokenRepository,
};
use uuid::Uuid;

use crate::common::{self, now, tenant, token};
use crate::{assert_same, bare_proxy, each_backend, key_hash, proxy};

#[tokio::test]
async fn the_key_hash_finds_a_proxy_in_any_tenant() {
    each_backend(|r| async move {
        let other = tenant(&r.tenants).await;
        let mine = proxy(r.tenant, "Mine", now());
        let theirs = bare_proxy(other, "Theirs", now());
        r.proxies.insert(&mine).await.unwrap();
        r.proxies.insert(&theirs).await.unwrap();

        let found = r
            .proxies
            .find_by_key_hash(&mine.key_hash)
            .await
            .unwrap()
            .unwrap();
        assert_same(&found, &mine);
        let found = r
            .proxies
            .find_by_key_hash(&theirs.key_hash)
            .await
            .unwrap()
            .unwrap();
        assert_same(&found, &theirs);
        assert_eq!(found.proxy.tenant_id, other);

        assert!(
            r.proxies
                .find_by_key_hash(&key_hash())
                .await
                .unwrap()
                .is_none()
        );
        // A hash differing in one bit is another hash.
        let mut near = mine.key_hash;
        near.0[31] ^= 1;
        assert!(r.proxies.find_by_key_hash(&near).await.unwrap().is_none());
    })
    .await;
}

#[tokio::test]
async fn the_key_finds_its_proxy_with_the_tokens_its_caller_may_use_of_its_own_tenant() {
    use tokenvault_domain::permission::{ApplicationType, Permission};
    use tokenvault_domain::tenant::TenantSettings;
    for (backend, refused) in read_paths() {
        let db = TestDatabase::create(backend).await;
        db.db.refuse_direct_reads(refused);
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let proxies = SeaOrmProxyRepository::new(db.db.clone());
        let tokens = SeaOrmTokenRepository::new(db.db.clone());
        let private = || (ApplicationType::Private, vec![Permission::TokenUse]);
        let (my_key, their_key, manager_key) = (key_hash(), key_hash(), key_hash());
        let (mine, _) =
            common::tenant_with(&tenants, TenantSettings::default(), private(), &my_key).await;
        let (theirs, _) =
            common::tenant_with(&tenants, TenantSettings::default(), private(), &their_key).await;
        common::tenant_with(
            &tenants,
            TenantSettings::default(),
            (ApplicationType::Management, vec![Permission::TokenUse]),
            &manager_key,
        )
        .await;
        let with_auth = proxy(mine, "p", now());
        let mut lending = bare_proxy(mine, "lending", now());
        lending.proxy.application_id = Some(Uuid::now_v7());
        let bare = bare_proxy(mine, "bare", now());
        for p in [&with_auth, &lending, &bare, &proxy(theirs, "q", now())] {
            proxies.insert(p).await.unwrap();
        }
        // "shared" exists in both tenants; "gone" expired; "elsewhere" is the other tenant's.
        for (tenant_id, id) in [
            (mine, "one"),
            (mine, "shared"),
            (theirs, "shared"),
            (theirs, "elsewhere"),
        ] {
            tokens
                .insert(&token(tenant_id, id, "/", now()))
                .await
                .unwrap();
        }
        let mut gone = token(mine, "gone", "/", now());
        gone.expires_at = Some(now() - Duration::seconds(1));
        tokens.insert(&gone).await.unwrap();

        let ids: Vec<String> = ["elsewhere", "gone", "missing", "one", "shared"]
            .map(String::from)
            .to_vec();
        let read = |p: &StoredProxy, caller: Option<KeyHash>| {
            let (proxies, ids, hash) = (&proxies, ids.clone(), p.key_hash);
            async move {
                let (found, tokens) = proxies
                    .find_by_key_hash_also(&hash, caller.as_ref(), &ids, now())
                    .await
                    .unwrap()
                    .unwrap();
                assert_eq!(found.key_hash, hash);
                tokens.read().map(|tokens| {
                    let mut read: Vec<(Uuid, String)> =
                        tokens.into_iter().map(|t| (t.tenant_id, t.id)).collect();
                    read.sort();
                    read
                })
            }
        };
        let usable = vec![(mine, "one".to_string()), (mine, "shared".to_string())];
        // Not on Citus: a statement there reaches a tenant's rows only by naming the tenant.
        let reads_ahead = db.citus_workers().is_empty();
        if backend == tokenvault_persistence::testing::Backend::Postgres && reads_ahead {
            // Read with the proxy where they may be used, the live ones of its tenant only.
            assert_eq!(read(&with_auth, Some(my_key)).await, Some(usable.clone()));
            assert_eq!(read(&lending, None).await, Some(usable));
            // Nothing where they may not: no caller key, another tenant's, a management key,
            // a proxy without auth and without an application.
            for (p, caller) in [
                (&with_auth, None),
                (&with_auth, Some(their_key)),
                (&with_auth, Some(manager_key)),
                (&bare, Some(my_key)),
            ] {
                assert_eq!(read(p, caller).await, Some(vec![]), "{}", p.proxy.name);
            }
        } else {
            // SQLite reads the tokens once the caller is authorized.
            assert_eq!(read(&with_auth, Some(my_key)).await, None);
        }
        let (_, none) = proxies
            .find_by_key_hash_also(&with_auth.key_hash, Some(&my_key), &[], now())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(none, Beside::NotRead, "no ids, no read");
        assert!(
            proxies
                .find_by_key_hash_also(&key_hash(), Some(&my_key), &ids, now())
                .await
                .unwrap()
                .is_none(),
            "an unknown key finds nothing"
        );
        db.destroy().await;
    }
}
