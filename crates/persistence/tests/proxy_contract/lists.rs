//! Listing proxies: pages newest first, the ids filter and the name filter (a case-insensitive
//! literal substring).

use time::Duration;
use tokenvault_domain::ports::ProxyRepository;
use uuid::Uuid;

use crate::common::{now, tenant};
use crate::{assert_same, bare_proxy, each_backend, names, page, proxy};

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
