//! Proxies and their tenant: confined to it, removed with it.

use tokenvault_domain::ports::ProxyRepository;

use crate::common::{self, now, tenant};
use crate::{assert_same, each_backend, page, proxy};

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
