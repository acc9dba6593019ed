//! PostgreSQL's reads outside transactions and token inserts run on connections outside
//! SeaORM's pool (`postgres/direct.rs`, `reads.rs`): they answer as the pool did, and a read survives the server closing the
//! idle connections (a restart, an administrator's `pg_terminate_backend`); the group writer
//! checks a connection that sat idle, and never retries a write. The audit appender's
//! connection (`postgres/audit_copy.rs`) belongs to its own thread: appends from runtimes that have
//! stopped, and after the server closed it, still land.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use sea_orm::{ConnectionTrait, Statement};
use time::Duration;
use tokenvault_domain::application::KeyHash;
use tokenvault_domain::audit::{AppendOutcome, AuditEntry, AuditHead, StoredEvent};
use tokenvault_domain::permission::{ApplicationType, Permission};
use tokenvault_domain::ports::{
    ApplicationRepository, TenantRepository, TokenRepository, TokenWrite,
};
use tokenvault_domain::ports::{AuditRepository, UsageRepository};
use tokenvault_domain::tenant::TenantSettings;
use tokenvault_persistence::testing::{Backend, TestDatabase, backends};
use tokenvault_persistence::{
    SeaOrmApplicationRepository, SeaOrmAuditRepository, SeaOrmTenantRepository,
    SeaOrmTokenRepository, SeaOrmUsageRepository,
};

mod common;

use common::{now, tenant_with, token};

/// Closes every other connection to the test's database, as a restart would.
async fn terminate(db: &TestDatabase) {
    // The pool's own connections were closed by the last call too: the first tries may meet
    // one of them (the pool then drops it).
    for _ in 0..10 {
        if let Ok(closed) = db
            .db
            .execute_raw(Statement::from_string(
                db.db.get_database_backend(),
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = current_database() AND pid <> pg_backend_pid()",
            ))
            .await
        {
            assert!(closed.rows_affected() >= 1);
            return;
        }
    }
    panic!("no live connection to close the others with");
}

#[tokio::test]
async fn key_reads_and_inserts_survive_closed_idle_connections() {
    for backend in backends() {
        if backend != Backend::Postgres {
            continue; // the direct connections exist on PostgreSQL only
        }
        let db = TestDatabase::create(backend).await;
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let apps = SeaOrmApplicationRepository::new(db.db.clone());
        let tokens = SeaOrmTokenRepository::new(db.db.clone());
        let hash = KeyHash([7; 32]);
        let settings = TenantSettings {
            fingerprint_tokens: true,
            deduplicate_tokens: false,
        };
        let private = (ApplicationType::Private, vec![Permission::TokenRead]);
        let (tenant_id, app) = tenant_with(&tenants, settings, private, &hash).await;

        let (found, settings) = apps.find_by_key_hash(&hash).await.unwrap().unwrap();
        assert_eq!((found.id, settings.fingerprint_tokens), (app.id, true));
        assert!(
            apps.find_by_key_hash(&KeyHash([8; 32]))
                .await
                .unwrap()
                .is_none()
        );
        let first = token(tenant_id, "one", "/", now() - Duration::seconds(1));
        assert_eq!(tokens.insert(&first).await.unwrap(), TokenWrite::Done);
        assert_eq!(
            tokens.insert(&first).await.unwrap(),
            TokenWrite::DuplicateId,
            "a constraint is still the row's own answer"
        );
        let keyed = common::key_and_token(&apps, &hash, "one", now())
            .await
            .unwrap();
        assert_eq!(keyed.token.read().flatten().unwrap().id, "one");

        // The server closes every other connection of this database, the idle direct ones too.
        terminate(&db).await;
        let (again, _) = apps.find_by_key_hash(&hash).await.unwrap().unwrap();
        assert_eq!(
            again.id, app.id,
            "the read is tried once more on a new connection"
        );
        let keyed = common::key_and_token(&apps, &hash, "one", now())
            .await
            .unwrap();
        assert_eq!(keyed.application.id, app.id);
        // Every read outside a transaction runs there (`reads.rs`): one and many rows.
        terminate(&db).await;
        let many = tokens
            .get_many(tenant_id, &["one".into(), "none".into()], now())
            .await
            .unwrap();
        assert_eq!(many.len(), 1, "a read of many rows is tried again too");
        terminate(&db).await;
        let tenant = tenants.get(tenant_id).await.unwrap().unwrap();
        assert!(tenant.settings.fingerprint_tokens);
        assert_eq!(
            apps.get(tenant_id, app.id).await.unwrap().unwrap().id,
            app.id
        );
        // The writer's connection was closed too: idle for over a second, it is checked
        // before it carries rows, so the insert is not lost to it.
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        let second = token(tenant_id, "two", "/", now());
        assert_eq!(tokens.insert(&second).await.unwrap(), TokenWrite::Done);
        // Closed again and used at once: that insert fails (it is never retried, it may have
        // been committed), and the writer is back on a new connection for the next.
        terminate(&db).await;
        let third = token(tenant_id, "three", "/", now());
        assert!(tokens.insert(&third).await.is_err());
        assert_eq!(tokens.insert(&third).await.unwrap(), TokenWrite::Done);
        db.destroy().await;
    }
}

/// The group writer carries every tenant's inserts; a tenant being deleted (its row locked by
/// the delete's last step) holds up none of them for long: its row is answered `Missing` (a
/// 401, as once its delete commits) and the other tenant's row of the same group is written.
/// On PostgreSQL at once (`SKIP LOCKED`); on Citus after the writer's lock timeout (2 s), which
/// must hold on the workers too: without it the insert waited there until the delete ended.
#[tokio::test]
async fn a_tenant_being_deleted_does_not_hold_up_the_others() {
    for backend in backends() {
        if backend != Backend::Postgres {
            continue; // the group writer exists on PostgreSQL only
        }
        let db = TestDatabase::create(backend).await;
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let tokens = SeaOrmTokenRepository::new(db.db.clone());
        let leaving = common::tenant(&tenants).await;
        let staying = common::tenant(&tenants).await;
        let held = common::tenant(&tenants).await;
        // The purge's last step: the tenant is a tombstone, its row held by the `DELETE`.
        db.db
            .execute_unprepared(&format!(
                "UPDATE tenants SET deleted_at = now() WHERE id = '{leaving}'"
            ))
            .await
            .unwrap();
        let lock = deleting(&db, leaving).await;
        let (l1, s1) = (
            token(leaving, "l-1", "/", now()),
            token(staying, "s-1", "/", now()),
        );
        let (theirs, ours) = tokio::join!(tokens.insert(&l1), tokens.insert(&s1));
        assert_eq!(ours.unwrap(), TokenWrite::Done);
        assert_eq!(theirs.unwrap(), TokenWrite::Missing);
        // Alone in its group too, and on the second try: nothing waited out a timeout and
        // left the connection out of step.
        for id in ["l-2", "l-3"] {
            let alone = tokens.insert(&token(leaving, id, "/", now())).await;
            assert_eq!(alone.unwrap(), TokenWrite::Missing);
        }
        // The delete gone first: Citus runs one write of a reference table at a time, and a
        // second delete would wait for it.
        rollback(lock).await;
        // A live tenant's row held by some other transaction: an error to retry, never a 401.
        let admin = deleting(&db, held).await;
        let refused = tokens.insert(&token(held, "h-1", "/", now())).await;
        assert!(refused.is_err(), "{refused:?}");
        rollback(admin).await;
        let written = tokens.insert(&token(held, "h-1", "/", now())).await;
        assert_eq!(written.unwrap(), TokenWrite::Done);
        db.destroy().await;
    }
}

/// A connection that holds `tenant`'s row as its delete does (in an open transaction), until
/// it is dropped.
async fn deleting(db: &TestDatabase, tenant: uuid::Uuid) -> sea_orm::sqlx::PgConnection {
    use sea_orm::sqlx::{Connection, Executor, PgConnection};
    let options = db.db.get_postgres_connection_pool().connect_options();
    let mut conn = PgConnection::connect_with(&options).await.unwrap();
    conn.execute("BEGIN").await.unwrap();
    conn.execute(sea_orm::sqlx::AssertSqlSafe(format!(
        "DELETE FROM tenants WHERE id = '{tenant}'"
    )))
    .await
    .unwrap();
    conn
}

/// Ends the delete `conn` holds without committing it.
async fn rollback(mut conn: sea_orm::sqlx::PgConnection) {
    use sea_orm::sqlx::Executor;
    conn.execute("ROLLBACK").await.unwrap();
}

/// The audit appender carries every tenant's appends, one after another; one behind a tenant
/// being deleted is not held up by it: the locked tenant's append fails at once (`55P03`, the
/// lock not available, not the appender's 30-second deadline), and the next tenant's lands
/// while the lock is still held.
#[tokio::test]
async fn an_audit_append_does_not_wait_behind_a_tenant_being_deleted() {
    for backend in backends() {
        if backend != Backend::Postgres {
            continue; // the appender thread exists on PostgreSQL only
        }
        let db = TestDatabase::create(backend).await;
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let audit = SeaOrmAuditRepository::new(db.db.clone());
        let leaving = common::tenant(&tenants).await;
        let staying = common::tenant(&tenants).await;
        let lock = deleting(&db, leaving).await;
        let (first, second) = ([audit_entry(leaving, 1)], [audit_entry(staying, 1)]);
        let (theirs, ours) = tokio::join!(
            audit.append(leaving, None, &first),
            audit.append(staying, None, &second)
        );
        assert_eq!(ours.unwrap(), AppendOutcome::Appended);
        let theirs = format!("{:?}", theirs.unwrap_err());
        assert!(theirs.contains("55P03"), "{theirs}");
        assert_eq!(audit.head(staying).await.unwrap().unwrap().seq, 1);
        rollback(lock).await;
        // Once the delete is gone (rolled back here), the tenant's append goes through.
        assert_eq!(
            audit
                .append(leaving, None, &[audit_entry(leaving, 1)])
                .await
                .unwrap(),
            AppendOutcome::Appended
        );
        db.destroy().await;
    }
}

/// The activity flush writes every tenant's rows in one statement; a tenant being deleted has
/// its rows left out at once instead of holding the others' (or failing them).
#[tokio::test]
async fn an_activity_flush_leaves_out_a_tenant_being_deleted() {
    for backend in backends() {
        if backend != Backend::Postgres {
            continue; // SQLite has one writer: a delete and a flush never overlap
        }
        let db = TestDatabase::create(backend).await;
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let usage = SeaOrmUsageRepository::new(db.db.clone());
        let leaving = common::tenant(&tenants).await;
        let staying = common::tenant(&tenants).await;
        let month = "2026-11".to_owned();
        let lock = deleting(&db, leaving).await;
        let rows = [
            (leaving, month.clone(), "l-1".to_owned()),
            (staying, month.clone(), "s-1".to_owned()),
        ];
        // Were the flush to wait on the lock, it would wait for this test: forever.
        tokio::time::timeout(
            std::time::Duration::from_secs(20),
            usage.record_activity(&rows),
        )
        .await
        .expect("the flush waited on the tenant being deleted")
        .unwrap();
        assert_eq!(usage.count_active(staying, &month).await.unwrap(), 1);
        rollback(lock).await;
        assert_eq!(usage.count_active(leaving, &month).await.unwrap(), 0);
        db.destroy().await;
    }
}

/// Entry `seq` of `tenant_id`'s chain.
fn audit_entry(tenant_id: uuid::Uuid, seq: i64) -> AuditEntry {
    AuditEntry {
        event: StoredEvent {
            id: uuid::Uuid::now_v7(),
            tenant_id,
            actor_type: "application".into(),
            actor_id: None,
            operation: "read".into(),
            entity_type: "token".into(),
            entity_id: format!("tok-{seq}"),
            trace_id: None,
            created_at: now(),
        },
        seq,
        hash: format!("h{seq}"),
    }
}

#[tokio::test]
async fn audit_appends_outlive_the_runtimes_that_made_them_and_closed_connections() {
    for backend in backends() {
        if backend != Backend::Postgres {
            continue; // the appender thread exists on PostgreSQL only
        }
        let db = TestDatabase::create(backend).await;
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let t = common::tenant(&tenants).await;
        let audit = SeaOrmAuditRepository::new(db.db.clone());
        let head = |seq: i64| AuditHead {
            seq,
            hash: format!("h{seq}"),
        };

        // The first append runs from a runtime that then stops, as an HTTP worker's does at
        // shutdown; the next, from another runtime, still lands.
        let elsewhere = audit.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            assert_eq!(
                runtime
                    .block_on(elsewhere.append(t, None, &[audit_entry(t, 1)]))
                    .unwrap(),
                AppendOutcome::Appended
            );
        })
        .join()
        .unwrap();
        assert_eq!(
            audit
                .append(t, Some(&head(1)), &[audit_entry(t, 2)])
                .await
                .unwrap(),
            AppendOutcome::Appended
        );

        // The server closes the appender's connection: the next append, which had sent
        // nothing yet, goes in on a new one.
        terminate(&db).await;
        assert_eq!(
            audit
                .append(t, Some(&head(2)), &[audit_entry(t, 3)])
                .await
                .unwrap(),
            AppendOutcome::Appended
        );
        // SeaORM's pool lost its connections too; its first reads may meet one of them.
        let mut chain = Err(tokenvault_domain::RepoError::Conflict(String::new()));
        for _ in 0..10 {
            chain = audit.chain(t, 0, 10).await;
            if chain.is_ok() {
                break;
            }
        }
        let chain = chain.unwrap();
        assert_eq!(audit.head(t).await.unwrap(), Some(head(3)));
        assert_eq!(
            chain.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [1, 2, 3],
            "each entry once"
        );
        db.destroy().await;
    }
}
