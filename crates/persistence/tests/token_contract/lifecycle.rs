//! A token's life: insert, read, update over the version read, delete; its associations and
//! children.

use tokenvault_domain::page::PageRequest;
use tokenvault_domain::ports::{TokenFilter, TokenRepository, TokenWrite};
use tokenvault_domain::token::StoredToken;

use crate::common::{each_backend, filter, now, tenant, token};

#[tokio::test]
async fn insert_get_update_delete() {
    each_backend(|r| async move {
        let t = token(r.tenant, "tok-1", "/general/high/", now());
        assert_eq!(r.tokens.insert(&t).await.unwrap(), TokenWrite::Done);
        assert_eq!(
            r.tokens
                .get(r.tenant, "tok-1", now())
                .await
                .unwrap()
                .unwrap(),
            t
        );
        assert_eq!(r.tokens.insert(&t).await.unwrap(), TokenWrite::DuplicateId);
        // The same id in another tenant is another token.
        let other = tenant(&r.tenants).await;
        assert_eq!(
            r.tokens
                .insert(&token(other, "tok-1", "/", now()))
                .await
                .unwrap(),
            TokenWrite::Done
        );
        assert!(
            r.tokens
                .get(other, "tok-1", now())
                .await
                .unwrap()
                .unwrap()
                .container
                == "/"
        );

        let mut changed = t.clone();
        changed.container = "/general/low/".into();
        changed.data = vec![1, 2, 3];
        changed.mask = Some(vec![9]);
        changed.metadata.insert("k".into(), "v".into());
        changed.modified_at = Some(now());
        changed.deduplicate = Some(false);
        assert_eq!(r.tokens.update(&changed).await.unwrap(), TokenWrite::Done);
        let read = r
            .tokens
            .get(r.tenant, "tok-1", now())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(read.version, 1, "every update moves the version on");
        assert_eq!(
            read,
            StoredToken {
                version: 1,
                ..changed.clone()
            }
        );
        // A write over a version that is no longer the row's changes nothing (a concurrent
        // PATCH came first): reported as `Missing`, the row as the first write left it.
        let mut stale = changed.clone();
        stale.container = "/".into();
        assert_eq!(r.tokens.update(&stale).await.unwrap(), TokenWrite::Missing);
        assert_eq!(
            r.tokens
                .get(r.tenant, "tok-1", now())
                .await
                .unwrap()
                .unwrap()
                .container,
            "/general/low/"
        );
        let changed = read;
        let mut ghost = changed.clone();
        ghost.id = "ghost".into();
        assert_eq!(r.tokens.update(&ghost).await.unwrap(), TokenWrite::Missing);

        assert!(r.tokens.delete(r.tenant, "tok-1").await.unwrap());
        assert!(
            r.tokens
                .get(r.tenant, "tok-1", now())
                .await
                .unwrap()
                .is_none()
        );
        assert!(!r.tokens.delete(r.tenant, "tok-1").await.unwrap());
        assert!(
            r.tokens.get(other, "tok-1", now()).await.unwrap().is_some(),
            "other tenant untouched"
        );
    })
    .await;
}

/// Many concurrent inserts of one id (a client-chosen id, an alias that renders the same): one
/// is stored and told so, every other is told the id is taken, and the stored data is the
/// winner's, on both databases (their group writers see twins in one group).
#[tokio::test]
async fn associations_and_children() {
    each_backend(|r| async move {
        for id in ["p-1", "c-1", "c-2"] {
            r.tokens
                .insert(&token(r.tenant, id, "/", now()))
                .await
                .unwrap();
        }
        assert_eq!(
            r.tokens.associate(r.tenant, "p-1", "c-1").await.unwrap(),
            TokenWrite::Done
        );
        assert_eq!(
            r.tokens.associate(r.tenant, "p-1", "c-2").await.unwrap(),
            TokenWrite::Done
        );
        assert_eq!(
            r.tokens.associate(r.tenant, "p-1", "c-1").await.unwrap(),
            TokenWrite::DuplicateId
        );
        assert_eq!(
            r.tokens.associate(r.tenant, "c-1", "p-1").await.unwrap(),
            TokenWrite::Done,
            "reverse is separate"
        );
        assert_eq!(
            r.tokens
                .associate(r.tenant, "p-1", "missing")
                .await
                .unwrap(),
            TokenWrite::Missing
        );
        let page = PageRequest::default();
        let children = r
            .tokens
            .list(
                r.tenant,
                &TokenFilter {
                    parent: Some("p-1".into()),
                    ..filter()
                },
                page,
                now(),
            )
            .await
            .unwrap();
        assert_eq!(children.total_items, 2);
        assert!(r.tokens.dissociate(r.tenant, "p-1", "c-2").await.unwrap());
        assert!(!r.tokens.dissociate(r.tenant, "p-1", "c-2").await.unwrap());
        // Deleting a token removes its associations (both directions).
        assert!(r.tokens.delete(r.tenant, "c-1").await.unwrap());
        let children = r
            .tokens
            .list(
                r.tenant,
                &TokenFilter {
                    parent: Some("p-1".into()),
                    ..filter()
                },
                page,
                now(),
            )
            .await
            .unwrap();
        assert_eq!(children.total_items, 0);
        r.tokens
            .insert(&token(r.tenant, "c-1", "/", now()))
            .await
            .unwrap();
        let children = r
            .tokens
            .list(
                r.tenant,
                &TokenFilter {
                    parent: Some("p-1".into()),
                    ..filter()
                },
                page,
                now(),
            )
            .await
            .unwrap();
        assert_eq!(
            children.total_items, 0,
            "a re-created id does not inherit links"
        );
    })
    .await;
}
