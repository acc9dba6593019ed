//! Proxy repository contract: the same stories on SQLite and PostgreSQL, fresh database each.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::collections::BTreeMap;

use time::{Duration, OffsetDateTime};
use tokenvault_domain::RepoError;
use tokenvault_domain::application::KeyHash;
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::ports::{Beside, ProxyRepository, StoredProxy, TokenRepository};
use tokenvault_domain::proxy::Proxy;
use tokenvault_persistence::testing::{TestDatabase, read_paths};
use tokenvault_persistence::{
    SeaOrmProxyRepository, SeaOrmTenantRepository, SeaOrmTokenRepository,
};
use uuid::Uuid;

mod common;

use common::{now, tenant, token};

struct Repos {
    tenants: SeaOrmTenantRepository,
    proxies: SeaOrmProxyRepository,
    tenant: Uuid,
}

async fn each_backend<F, Fut>(story: F)
where
    F: Fn(Repos) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for (backend, refused) in read_paths() {
        let db = TestDatabase::create(backend).await;
        db.db.refuse_direct_reads(refused);
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let tenant = tenant(&tenants).await;
        story(Repos {
            tenants,
            proxies: SeaOrmProxyRepository::new(db.db.clone()),
            tenant,
        })
        .await;
        db.destroy().await;
    }
}

/// A random key hash, every byte varied (high bits included).
fn key_hash() -> KeyHash {
    let mut h = [0u8; 32];
    h[..16].copy_from_slice(Uuid::new_v4().as_bytes());
    h[16..].copy_from_slice(Uuid::new_v4().as_bytes());
    KeyHash(h)
}

/// A proxy with every optional field set.
fn proxy(tenant_id: Uuid, name: &str, created_at: OffsetDateTime) -> StoredProxy {
    StoredProxy {
        proxy: Proxy {
            id: Uuid::now_v7(),
            tenant_id,
            name: name.into(),
            destination_url: "https://api.example.com/v1/charges".into(),
            require_auth: true,
            request_transform: Some(
                "module.exports = async function (req) { return req; };".into(),
            ),
            response_transform: Some("module.exports = async (res) => res;".into()),
            application_id: Some(Uuid::now_v7()),
            configuration: Some(BTreeMap::from([
                ("API_KEY".to_string(), "sk_live_1".to_string()),
                ("region".to_string(), "eu \"west\" ü".to_string()),
            ])),
            created_by: Some(Uuid::now_v7()),
            created_at,
            modified_by: Some(Uuid::now_v7()),
            modified_at: Some(created_at + Duration::seconds(1)),
        },
        key_hash: key_hash(),
        key_ciphertext: vec![0x00, 0xff, 0x10, 0x80, 0x7f, 0x00],
    }
}

/// A proxy with every optional field empty.
fn bare_proxy(tenant_id: Uuid, name: &str, created_at: OffsetDateTime) -> StoredProxy {
    let mut p = proxy(tenant_id, name, created_at);
    p.proxy.destination_url = "http://127.0.0.1:8080".into();
    p.proxy.require_auth = false;
    p.proxy.request_transform = None;
    p.proxy.response_transform = None;
    p.proxy.application_id = None;
    p.proxy.configuration = None;
    p.proxy.created_by = None;
    p.proxy.modified_by = None;
    p.proxy.modified_at = None;
    p
}

fn assert_same(got: &StoredProxy, expected: &StoredProxy) {
    assert_eq!(got.proxy, expected.proxy);
    assert!(got.key_hash == expected.key_hash, "key hash differs");
    assert_eq!(got.key_ciphertext, expected.key_ciphertext);
}

fn names(page: &Page<StoredProxy>) -> Vec<String> {
    page.items.iter().map(|p| p.proxy.name.clone()).collect()
}

fn page(page: u64, size: u64) -> PageRequest {
    PageRequest { page, size }
}

#[tokio::test]
async fn every_field_round_trips() {
    each_backend(|r| async move {
        let full = proxy(r.tenant, "Full", now());
        let bare = bare_proxy(r.tenant, "Bare", now());
        let mut empty_config = bare_proxy(r.tenant, "Empty config", now());
        empty_config.proxy.configuration = Some(BTreeMap::new());
        for p in [&full, &bare, &empty_config] {
            r.proxies.insert(p).await.unwrap();
        }
        for p in [&full, &bare, &empty_config] {
            let got = r.proxies.get(r.tenant, p.proxy.id).await.unwrap().unwrap();
            assert_same(&got, p);
            let found = r
                .proxies
                .find_by_key_hash(&p.key_hash)
                .await
                .unwrap()
                .unwrap();
            assert_same(&found, p);
        }
        assert!(
            r.proxies
                .get(r.tenant, Uuid::now_v7())
                .await
                .unwrap()
                .is_none()
        );
    })
    .await;
}

#[tokio::test]
async fn a_duplicate_id_or_key_hash_is_a_conflict() {
    each_backend(|r| async move {
        let other = tenant(&r.tenants).await;
        let p = proxy(r.tenant, "First", now());
        r.proxies.insert(&p).await.unwrap();

        // The same id again, with a new key.
        let mut same_id = proxy(r.tenant, "Same id", now());
        same_id.proxy.id = p.proxy.id;
        assert!(matches!(
            r.proxies.insert(&same_id).await,
            Err(RepoError::Conflict(_))
        ));
        assert!(
            r.proxies
                .find_by_key_hash(&same_id.key_hash)
                .await
                .unwrap()
                .is_none()
        );

        // The same key hash, in this tenant or any other.
        for tenant_id in [r.tenant, other] {
            let mut same_key = proxy(tenant_id, "Same key", now());
            same_key.key_hash = p.key_hash;
            assert!(matches!(
                r.proxies.insert(&same_key).await,
                Err(RepoError::Conflict(_))
            ));
            assert!(
                r.proxies
                    .get(tenant_id, same_key.proxy.id)
                    .await
                    .unwrap()
                    .is_none()
            );
        }
        assert_same(
            &r.proxies.get(r.tenant, p.proxy.id).await.unwrap().unwrap(),
            &p,
        );
        assert_same(
            &r.proxies
                .find_by_key_hash(&p.key_hash)
                .await
                .unwrap()
                .unwrap(),
            &p,
        );

        // The same id in another tenant is another proxy.
        let mut twin = proxy(other, "Twin", now());
        twin.proxy.id = p.proxy.id;
        r.proxies.insert(&twin).await.unwrap();
        assert_same(
            &r.proxies.get(other, p.proxy.id).await.unwrap().unwrap(),
            &twin,
        );
        assert_same(
            &r.proxies.get(r.tenant, p.proxy.id).await.unwrap().unwrap(),
            &p,
        );
    })
    .await;
}

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
async fn update_replaces_every_mutable_field_and_delete_removes() {
    each_backend(|r| async move {
        let p = proxy(r.tenant, "Stripe", now());
        r.proxies.insert(&p).await.unwrap();

        let mut changed = p.clone();
        changed.proxy.name = "Adyen".into();
        changed.proxy.destination_url = "http://10.0.0.1/pay".into();
        changed.proxy.require_auth = false;
        changed.proxy.request_transform = None;
        changed.proxy.response_transform = Some("module.exports = () => 1;".into());
        changed.proxy.application_id = None;
        changed.proxy.configuration = Some(BTreeMap::from([("k".to_string(), "v".to_string())]));
        changed.proxy.modified_by = Some(Uuid::now_v7());
        changed.proxy.modified_at = Some(now() + Duration::minutes(5));
        // The key, creator and creation time are not the update's.
        let mut sent = changed.clone();
        sent.key_hash = key_hash();
        sent.key_ciphertext = vec![9, 9, 9];
        sent.proxy.created_by = None;
        sent.proxy.created_at = now() + Duration::days(1);
        assert!(r.proxies.update(&sent).await.unwrap());
        assert_same(
            &r.proxies.get(r.tenant, p.proxy.id).await.unwrap().unwrap(),
            &changed,
        );
        assert!(
            r.proxies
                .find_by_key_hash(&sent.key_hash)
                .await
                .unwrap()
                .is_none()
        );
        assert_same(
            &r.proxies
                .find_by_key_hash(&p.key_hash)
                .await
                .unwrap()
                .unwrap(),
            &changed,
        );

        // From nothing back to everything.
        let mut refilled = changed.clone();
        refilled.proxy.request_transform = Some("module.exports = (r) => r;".into());
        refilled.proxy.application_id = Some(Uuid::now_v7());
        refilled.proxy.configuration = None;
        assert!(r.proxies.update(&refilled).await.unwrap());
        assert_same(
            &r.proxies.get(r.tenant, p.proxy.id).await.unwrap().unwrap(),
            &refilled,
        );

        assert!(
            !r.proxies
                .update(&proxy(r.tenant, "ghost", now()))
                .await
                .unwrap()
        );

        assert!(r.proxies.delete(r.tenant, p.proxy.id).await.unwrap());
        assert!(r.proxies.get(r.tenant, p.proxy.id).await.unwrap().is_none());
        assert!(
            r.proxies
                .find_by_key_hash(&p.key_hash)
                .await
                .unwrap()
                .is_none()
        );
        assert!(!r.proxies.delete(r.tenant, p.proxy.id).await.unwrap());
        assert!(!r.proxies.delete(r.tenant, Uuid::now_v7()).await.unwrap());
        // Its key is free again.
        let mut again = proxy(r.tenant, "Again", now());
        again.key_hash = p.key_hash;
        r.proxies.insert(&again).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn proxies_are_confined_to_their_tenant() {
    each_backend(|r| async move {
        let other = tenant(&r.tenants).await;
        let p = proxy(r.tenant, "Mine", now());
        r.proxies.insert(&p).await.unwrap();

        assert!(r.proxies.get(other, p.proxy.id).await.unwrap().is_none());
        let listed = r.proxies.list(other, &[], None, page(1, 20)).await.unwrap();
        assert_eq!((listed.items.len(), listed.total_items), (0, 0));
        let listed = r
            .proxies
            .list(other, &[p.proxy.id], Some("Mine"), page(1, 20))
            .await
            .unwrap();
        assert_eq!((listed.items.len(), listed.total_items), (0, 0));

        // Writes under another tenant touch nothing.
        let mut foreign = p.clone();
        foreign.proxy.tenant_id = other;
        foreign.proxy.name = "Hijacked".into();
        foreign.proxy.destination_url = "https://evil.example.com".into();
        foreign.proxy.require_auth = false;
        assert!(!r.proxies.update(&foreign).await.unwrap());
        assert!(!r.proxies.delete(other, p.proxy.id).await.unwrap());
        assert_same(
            &r.proxies.get(r.tenant, p.proxy.id).await.unwrap().unwrap(),
            &p,
        );
        let listed = r
            .proxies
            .list(r.tenant, &[], None, page(1, 20))
            .await
            .unwrap();
        assert_eq!(listed.total_items, 1);
        assert_same(&listed.items[0], &p);
    })
    .await;
}

#[tokio::test]
async fn lists_are_paged_newest_first() {
    each_backend(|r| async move {
        let other = tenant(&r.tenants).await;
        let base = now() - Duration::hours(1);
        let mut proxies = Vec::new();
        for i in 0..5i64 {
            let p = proxy(r.tenant, &format!("p{i}"), base + Duration::seconds(i));
            r.proxies.insert(&p).await.unwrap();
            proxies.push(p);
        }
        // Same creation time: the larger id comes first.
        let mut tie = bare_proxy(r.tenant, "tie", base + Duration::seconds(4));
        tie.proxy.id = Uuid::max();
        r.proxies.insert(&tie).await.unwrap();
        // Another tenant's newest proxy is never listed here.
        r.proxies
            .insert(&proxy(other, "theirs", base + Duration::seconds(9)))
            .await
            .unwrap();

        let first = r
            .proxies
            .list(r.tenant, &[], None, page(1, 2))
            .await
            .unwrap();
        assert_eq!(first.total_items, 6);
        assert_eq!(names(&first), ["tie", "p4"]);
        assert_same(&first.items[0], &tie);
        let second = r
            .proxies
            .list(r.tenant, &[], None, page(2, 2))
            .await
            .unwrap();
        assert_eq!(names(&second), ["p3", "p2"]);
        assert_same(&second.items[0], &proxies[3]);
        let third = r
            .proxies
            .list(r.tenant, &[], None, page(3, 2))
            .await
            .unwrap();
        assert_eq!(names(&third), ["p1", "p0"]);
        let last = r
            .proxies
            .list(r.tenant, &[], None, page(4, 2))
            .await
            .unwrap();
        assert!(last.items.is_empty());
        assert_eq!(last.total_items, 6);
        assert_eq!(last.request, page(4, 2));

        // Only the given ids (unknown ones are ignored), still newest first.
        let ids = [proxies[1].proxy.id, proxies[3].proxy.id, Uuid::now_v7()];
        let only = r
            .proxies
            .list(r.tenant, &ids, None, page(1, 20))
            .await
            .unwrap();
        assert_eq!(only.total_items, 2);
        assert_eq!(names(&only), ["p3", "p1"]);
        let only = r
            .proxies
            .list(r.tenant, &ids, None, page(2, 1))
            .await
            .unwrap();
        assert_eq!(only.total_items, 2);
        assert_eq!(names(&only), ["p1"]);
    })
    .await;
}

#[tokio::test]
async fn name_filter_is_a_case_insensitive_literal_substring() {
    each_backend(|r| async move {
        let base = now() - Duration::hours(1);
        let all = [
            "Stripe Payments",
            "stripe refunds",
            "STRIPE",
            "Adyen",
            "100% off",
            "1000 off",
            "snake_case",
            "snakeXcase",
            "back\\slash",
        ];
        let mut stored = Vec::new();
        for (i, name) in (0i64..).zip(all) {
            let p = proxy(r.tenant, name, base + Duration::seconds(i));
            r.proxies.insert(&p).await.unwrap();
            stored.push(p);
        }
        for (search, expected) in [
            (
                "stripe",
                &["STRIPE", "stripe refunds", "Stripe Payments"][..],
            ),
            ("PAY", &["Stripe Payments"][..]),
            ("%", &["100% off"][..]),
            ("0% o", &["100% off"][..]),
            ("_", &["snake_case"][..]),
            ("e_c", &["snake_case"][..]),
            ("\\", &["back\\slash"][..]),
            ("k\\s", &["back\\slash"][..]),
            ("nothing", &[][..]),
        ] {
            let listed = r
                .proxies
                .list(r.tenant, &[], Some(search), page(1, 20))
                .await
                .unwrap();
            assert_eq!(names(&listed), expected, "{search:?}");
            assert_eq!(listed.total_items, expected.len() as u64, "{search:?}");
        }
        // An empty search matches everything.
        let every = r
            .proxies
            .list(r.tenant, &[], Some(""), page(1, 20))
            .await
            .unwrap();
        assert_eq!(every.total_items, all.len() as u64);

        // The name filter combines with the ids filter and with paging.
        let ids = [stored[2].proxy.id, stored[3].proxy.id];
        let both = r
            .proxies
            .list(r.tenant, &ids, Some("stripe"), page(1, 20))
            .await
            .unwrap();
        assert_eq!(names(&both), ["STRIPE"]);
        let paged = r
            .proxies
            .list(r.tenant, &[], Some("STRIPE"), page(2, 2))
            .await
            .unwrap();
        assert_eq!(paged.total_items, 3);
        assert_eq!(names(&paged), ["Stripe Payments"]);
    })
    .await;
}

#[tokio::test]
async fn deleting_a_tenant_removes_its_proxies() {
    each_backend(|r| async move {
        let other = tenant(&r.tenants).await;
        let mut mine = Vec::new();
        for i in 0..3 {
            let p = proxy(r.tenant, &format!("p{i}"), now());
            r.proxies.insert(&p).await.unwrap();
            mine.push(p);
        }
        let theirs = proxy(other, "theirs", now());
        r.proxies.insert(&theirs).await.unwrap();

        assert!(common::delete_tenant(&r.tenants, r.tenant).await);
        let listed = r
            .proxies
            .list(r.tenant, &[], None, page(1, 20))
            .await
            .unwrap();
        assert_eq!(listed.total_items, 0);
        for p in &mine {
            assert!(r.proxies.get(r.tenant, p.proxy.id).await.unwrap().is_none());
            assert!(
                r.proxies
                    .find_by_key_hash(&p.key_hash)
                    .await
                    .unwrap()
                    .is_none()
            );
        }
        // The other tenant keeps its proxy.
        assert_same(
            &r.proxies
                .get(other, theirs.proxy.id)
                .await
                .unwrap()
                .unwrap(),
            &theirs,
        );
        assert!(common::delete_tenant(&r.tenants, other).await);
        assert!(
            r.proxies
                .find_by_key_hash(&theirs.key_hash)
                .await
                .unwrap()
                .is_none()
        );
    })
    .await;
}

#[tokio::test]
async fn a_proxy_needs_an_existing_tenant() {
    each_backend(|r| async move {
        let orphan = proxy(Uuid::now_v7(), "orphan", now());
        assert!(r.proxies.insert(&orphan).await.is_err());
        assert!(
            r.proxies
                .find_by_key_hash(&orphan.key_hash)
                .await
                .unwrap()
                .is_none()
        );
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
