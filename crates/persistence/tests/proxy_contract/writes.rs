//! Writing proxies: every field round-trips, a duplicate id or key hash is a conflict, an update
//! replaces every mutable field, a delete removes, and a proxy needs its tenant.

use std::collections::BTreeMap;

use time::Duration;
use tokenvault_domain::RepoError;
use tokenvault_domain::ports::ProxyRepository;
use uuid::Uuid;

use crate::common::{now, tenant};
use crate::{assert_same, bare_proxy, each_backend, key_hash, proxy};

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
