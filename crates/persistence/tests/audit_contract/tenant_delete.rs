//! Deleting a tenant removes its log, even while the log is being appended to.

use sea_orm::{ConnectionTrait, Statement};
use tokenvault_domain::audit::AppendOutcome::Appended;
use tokenvault_domain::audit::AuditFilter;
use tokenvault_domain::page::PageRequest;
use tokenvault_domain::ports::AuditRepository;

use crate::common::{self, tenant};
use crate::{each_backend, entries, head_of, whole_chain};

#[tokio::test]
async fn deleting_the_tenant_removes_its_log() {
    each_backend(|r| async move {
        let other = tenant(&r.tenants).await;
        let mine = entries(r.tenant, 1, 3);
        let theirs = entries(other, 1, 2);
        assert_eq!(
            r.audit.append(r.tenant, None, &mine).await.unwrap(),
            Appended
        );
        assert_eq!(
            r.audit.append(other, None, &theirs).await.unwrap(),
            Appended
        );
        let mut both = vec![r.tenant, other];
        both.sort_unstable();
        assert_eq!(r.audit.tenants().await.unwrap(), both);

        assert!(common::delete_tenant(&r.tenants, r.tenant).await);
        assert_eq!(r.audit.head(r.tenant).await.unwrap(), None);
        assert!(whole_chain(&r.audit, r.tenant).await.is_empty());
        let listed = r
            .audit
            .list(r.tenant, &AuditFilter::default(), PageRequest::default())
            .await
            .unwrap();
        assert_eq!(listed.total_items, 0);
        assert_eq!(r.audit.tenants().await.unwrap(), vec![other]);
        assert_eq!(r.audit.head(other).await.unwrap(), Some(head_of(&theirs)));
        assert_eq!(whole_chain(&r.audit, other).await, theirs);
        let rows =
            r.db.query_one_raw(Statement::from_string(
                r.db.get_database_backend(),
                "SELECT COUNT(*) AS n FROM audit_log",
            ))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(rows.try_get::<i64>("", "n").unwrap(), 2);
    })
    .await;
}

#[tokio::test]
async fn a_tenant_deleted_while_its_log_is_appended_to_is_deleted() {
    // An append took the head's row lock, then waited on the tenant's row for its entries'
    // foreign key, while the tenant's delete held that row and waited on the head: a deadlock
    // that failed the delete. Appends now take the tenant's row first.
    each_backend(|r| async move {
        for _ in 0..20 {
            let t = tenant(&r.tenants).await;
            let first = entries(t, 1, 2);
            assert_eq!(r.audit.append(t, None, &first).await.unwrap(), Appended);
            let (head, next) = (head_of(&first), entries(t, 3, 40));
            let (appended, deleted) = tokio::join!(
                r.audit.append(t, Some(&head), &next),
                common::delete_tenant_purged(&r.tenants, t)
            );
            assert!(deleted.unwrap(), "the delete goes through");
            let _ = appended; // before the delete (then deleted with it) or refused
            assert_eq!(r.audit.head(t).await.unwrap(), None);
            assert!(whole_chain(&r.audit, t).await.is_empty());
        }
    })
    .await;
}
