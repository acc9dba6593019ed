//! Repository contract suite: the same stories against SQLite and PostgreSQL, each on a fresh
//! database with the real migrations.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use time::{Duration, OffsetDateTime};
use tokenvault_domain::RepoError;
use tokenvault_domain::access::{AccessRule, RuleScope, Transform};
use tokenvault_domain::application::{Application, KeyHash};
use tokenvault_domain::container::Container;
use tokenvault_domain::page::PageRequest;
use tokenvault_domain::permission::{ApplicationType, Permission};
use tokenvault_domain::ports::{AlsoRead, ApplicationRepository, TenantKeys, TenantRepository};
use tokenvault_domain::tenant::{Tenant, TenantSettings};
use tokenvault_persistence::testing::{Backend, TestDatabase, backends, read_paths};
use tokenvault_persistence::{SeaOrmApplicationRepository, SeaOrmTenantRepository};
use uuid::Uuid;

mod common;

fn now() -> OffsetDateTime {
    // Microsecond precision, as the domain clock gives.
    let t = OffsetDateTime::now_utc();
    t.replace_nanosecond(t.nanosecond() / 1000 * 1000).unwrap()
}

fn tenant(name: &str) -> Tenant {
    Tenant {
        id: Uuid::now_v7(),
        owner_id: Uuid::new_v4(),
        name: name.into(),
        settings: TenantSettings::default(),
        created_by: None,
        created_at: now(),
        modified_by: None,
        modified_at: None,
    }
}

fn app(tenant_id: Uuid, created_at: OffsetDateTime) -> Application {
    Application {
        id: Uuid::now_v7(),
        tenant_id,
        name: "app".into(),
        app_type: ApplicationType::Private,
        permissions: vec![Permission::TokenRead, Permission::TokenUse],
        rules: vec![AccessRule {
            description: Some("pci".into()),
            priority: 1,
            scope: RuleScope::Container(Container::parse("/pci/").unwrap()),
            transform: Transform::Mask,
            permissions: vec![Permission::TokenRead],
        }],
        created_by: Some(Uuid::new_v4()),
        created_at,
        modified_by: None,
        modified_at: None,
        expires_at: None,
    }
}

fn hash(n: u8) -> KeyHash {
    let mut h = [0u8; 32];
    h[0] = n;
    h[31] = n.wrapping_mul(7);
    KeyHash(h)
}

struct Repos {
    tenants: SeaOrmTenantRepository,
    apps: SeaOrmApplicationRepository,
}

async fn each_backend<F, Fut>(story: F)
where
    F: Fn(Repos) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for (backend, refused) in read_paths() {
        let db = TestDatabase::create(backend).await;
        db.db.refuse_direct_reads(refused);
        story(Repos {
            tenants: SeaOrmTenantRepository::new(db.db.clone()),
            apps: SeaOrmApplicationRepository::new(db.db.clone()),
        })
        .await;
        db.destroy().await;
    }
}

#[tokio::test]
async fn tenant_lifecycle() {
    each_backend(|r| async move {
        assert!(!r.tenants.any().await.unwrap());
        let mut t = tenant("Default");
        let a = app(t.id, now());
        r.tenants
            .create_with_application(&t, &[7, 7, 7], &a, &hash(1))
            .await
            .unwrap();
        assert!(r.tenants.any().await.unwrap());
        assert_eq!(r.tenants.get(t.id).await.unwrap().unwrap(), t);
        assert_eq!(
            r.apps.find_by_key_hash(&hash(1)).await.unwrap().unwrap().0,
            a
        );

        t.name = "Renamed".into();
        t.settings.deduplicate_tokens = true;
        t.modified_at = Some(now());
        t.modified_by = Some(a.id);
        assert!(r.tenants.update(&t).await.unwrap());
        assert_eq!(r.tenants.get(t.id).await.unwrap().unwrap(), t);
        assert!(!r.tenants.update(&tenant("ghost")).await.unwrap());
    })
    .await;
}

#[tokio::test]
async fn deleting_a_tenant_removes_its_applications() {
    each_backend(|r| async move {
        let t = tenant("a");
        let other = tenant("b");
        r.tenants
            .create_with_application(&t, &[7, 7, 7], &app(t.id, now()), &hash(1))
            .await
            .unwrap();
        r.tenants
            .create_with_application(&other, &[7, 7, 7], &app(other.id, now()), &hash(2))
            .await
            .unwrap();
        r.apps.insert(&app(t.id, now()), &hash(3)).await.unwrap();
        assert!(r.tenants.is_live(t.id).await.unwrap());
        assert!(!r.tenants.is_live(Uuid::from_u128(99)).await.unwrap());
        // The first step: gone for every read, its keys and its data key at once.
        assert!(r.tenants.delete(t.id, now()).await.unwrap());
        assert!(r.tenants.get(t.id).await.unwrap().is_none());
        assert!(
            !r.tenants.is_live(t.id).await.unwrap(),
            "a tombstone is not live"
        );
        assert!(r.tenants.is_live(other.id).await.unwrap());
        assert!(r.apps.find_by_key_hash(&hash(1)).await.unwrap().is_none());
        assert!(r.apps.find_by_key_hash(&hash(3)).await.unwrap().is_none());
        assert!(r.apps.find_by_key_hash(&hash(2)).await.unwrap().is_some());
        assert_eq!(r.tenants.data_key(t.id).await.unwrap(), None);
        assert!(
            !r.tenants.replace_data_key(t.id, &[], &[9]).await.unwrap(),
            "a deleted tenant never gets a fresh data key"
        );
        assert_eq!(r.tenants.data_key(t.id).await.unwrap(), None);
        let listed: Vec<Uuid> = r
            .tenants
            .list()
            .await
            .unwrap()
            .iter()
            .map(|t| t.id)
            .collect();
        assert_eq!(listed, vec![other.id]);
        assert_eq!(r.tenants.data_keys().await.unwrap().len(), 1);
        assert!(
            !r.tenants.delete(t.id, now()).await.unwrap(),
            "deleted once"
        );
        // The second step: nothing of it is left but the tombstone.
        assert_eq!(
            r.tenants.purge_deleted(2).await.unwrap(),
            1,
            "the tombstone alone"
        );
        assert_eq!(r.tenants.purge_deleted(2).await.unwrap(), 0, "nothing left");
        assert!(r.tenants.get(other.id).await.unwrap().is_some());
    })
    .await;
}

#[tokio::test]
async fn applications_are_confined_to_their_tenant() {
    each_backend(|r| async move {
        let t = tenant("a");
        let other = tenant("b");
        let first = app(t.id, now());
        r.tenants
            .create_with_application(&t, &[7, 7, 7], &first, &hash(1))
            .await
            .unwrap();
        r.tenants
            .create_with_application(&other, &[7, 7, 7], &app(other.id, now()), &hash(2))
            .await
            .unwrap();
        assert!(r.apps.get(other.id, first.id).await.unwrap().is_none());
        assert!(!r.apps.delete(other.id, first.id).await.unwrap());
        let mut moved = first.clone();
        moved.tenant_id = other.id;
        assert!(!r.apps.update(&moved).await.unwrap());
        assert!(!r.apps.replace_key(&moved, &hash(9)).await.unwrap());
        let page = r
            .apps
            .list(other.id, &[first.id], PageRequest::default())
            .await
            .unwrap();
        assert_eq!(page.total_items, 0);
        assert_eq!(r.apps.get(t.id, first.id).await.unwrap().unwrap(), first);
    })
    .await;
}

#[tokio::test]
async fn list_is_paged_newest_first_in_sql() {
    each_backend(|r| async move {
        let t = tenant("a");
        let base = now() - Duration::hours(1);
        let bootstrap = app(t.id, base);
        r.tenants
            .create_with_application(&t, &[7, 7, 7], &bootstrap, &hash(0))
            .await
            .unwrap();
        let mut ids = Vec::new();
        for i in 1..=5u8 {
            let a = app(t.id, base + Duration::seconds(i64::from(i)));
            r.apps.insert(&a, &hash(i)).await.unwrap();
            ids.push(a.id);
        }
        let all = r
            .apps
            .list(t.id, &[], PageRequest { page: 1, size: 100 })
            .await
            .unwrap();
        assert_eq!(all.total_items, 6);
        let listed: Vec<Uuid> = all.items.iter().map(|a| a.id).collect();
        let mut expected: Vec<Uuid> = ids.iter().rev().copied().collect();
        expected.push(bootstrap.id);
        assert_eq!(listed, expected);

        let page = r
            .apps
            .list(t.id, &ids, PageRequest { page: 3, size: 2 })
            .await
            .unwrap();
        assert_eq!(page.total_items, 5);
        assert_eq!(page.total_pages(), 3);
        assert_eq!(
            page.items.iter().map(|a| a.id).collect::<Vec<_>>(),
            vec![ids[0]]
        );

        let beyond = r
            .apps
            .list(t.id, &ids, PageRequest { page: 9, size: 2 })
            .await
            .unwrap();
        assert!(beyond.items.is_empty());
        assert_eq!(beyond.total_items, 5);
    })
    .await;
}

#[tokio::test]
async fn update_replace_key_and_delete() {
    each_backend(|r| async move {
        let t = tenant("a");
        let mut a = app(t.id, now());
        r.tenants
            .create_with_application(&t, &[7, 7, 7], &a, &hash(1))
            .await
            .unwrap();
        a.name = "renamed".into();
        a.permissions = vec![Permission::TokenCreate];
        a.rules.clear();
        a.modified_at = Some(now());
        a.modified_by = Some(Uuid::new_v4());
        assert!(r.apps.update(&a).await.unwrap());
        assert_eq!(r.apps.get(t.id, a.id).await.unwrap().unwrap(), a);

        assert!(r.apps.replace_key(&a, &hash(2)).await.unwrap());
        assert!(r.apps.find_by_key_hash(&hash(1)).await.unwrap().is_none());
        assert_eq!(
            r.apps
                .find_by_key_hash(&hash(2))
                .await
                .unwrap()
                .unwrap()
                .0
                .id,
            a.id
        );

        assert!(r.apps.delete(t.id, a.id).await.unwrap());
        assert!(r.apps.find_by_key_hash(&hash(2)).await.unwrap().is_none());
        assert!(!r.apps.delete(t.id, a.id).await.unwrap());
    })
    .await;
}

#[tokio::test]
async fn duplicate_key_hash_is_a_conflict() {
    each_backend(|r| async move {
        let t = tenant("a");
        r.tenants
            .create_with_application(&t, &[7, 7, 7], &app(t.id, now()), &hash(1))
            .await
            .unwrap();
        let err = r
            .apps
            .insert(&app(t.id, now()), &hash(1))
            .await
            .unwrap_err();
        assert!(matches!(err, RepoError::Conflict(_)), "{err:?}");
    })
    .await;
}

#[tokio::test]
async fn expired_applications_are_deleted() {
    each_backend(|r| async move {
        let t = tenant("a");
        r.tenants
            .create_with_application(&t, &[7, 7, 7], &app(t.id, now()), &hash(1))
            .await
            .unwrap();
        let mut gone = app(t.id, now());
        gone.expires_at = Some(now() - Duration::seconds(1));
        let mut kept = app(t.id, now());
        kept.expires_at = Some(now() + Duration::hours(1));
        r.apps.insert(&gone, &hash(2)).await.unwrap();
        r.apps.insert(&kept, &hash(3)).await.unwrap();
        assert_eq!(r.apps.delete_expired(now()).await.unwrap(), 1);
        assert!(r.apps.get(t.id, gone.id).await.unwrap().is_none());
        assert_eq!(r.apps.get(t.id, kept.id).await.unwrap().unwrap(), kept);
    })
    .await;
}

#[tokio::test]
async fn migrations_go_down_and_up_again() {
    use tokenvault_migrations::{Migrator, MigratorTrait};
    for backend in backends() {
        // Down migrations are for development on one database: on a Citus coordinator the
        // database is left undistributed (Citus refuses some of their DDL on distributed
        // tables, docs/operations.md).
        let db = match backend {
            Backend::Postgres => TestDatabase::create_undistributed().await,
            Backend::Sqlite => TestDatabase::create(backend).await,
        };
        let applied = Migrator::get_applied_migrations(db.db.connection())
            .await
            .unwrap()
            .len();
        assert_eq!(applied, Migrator::migrations().len());
        Migrator::down(db.db.connection(), None).await.unwrap();
        assert!(
            Migrator::get_applied_migrations(db.db.connection())
                .await
                .unwrap()
                .is_empty()
        );
        Migrator::up(db.db.connection(), None).await.unwrap();
        // The schema works again after the round trip.
        let repo = SeaOrmTenantRepository::new(db.db.clone());
        assert!(!repo.any().await.unwrap());
        db.destroy().await;
    }
}

#[tokio::test]
async fn sqlite_is_durable_unless_told_otherwise() {
    use sea_orm::{ConnectionTrait, DatabaseBackend, Statement};
    use tokenvault_persistence::{DbOptions, connect};
    let dir = std::env::temp_dir().join(format!("tv-sync-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}/s.db?mode=rwc", dir.display());
    // PRAGMA synchronous: 2 is FULL, 1 is NORMAL.
    for (normal, expected) in [(false, 2), (true, 1)] {
        let options = DbOptions {
            max_connections: 1,
            sqlite_synchronous_normal: normal,
            ..DbOptions::new(1)
        };
        let db = connect(&url, options).await.unwrap();
        let rows = db
            .query_all_raw(Statement::from_string(
                DatabaseBackend::Sqlite,
                "PRAGMA synchronous",
            ))
            .await
            .unwrap();
        let level: i32 = rows[0].try_get_by_index(0).unwrap();
        assert_eq!(level, expected, "normal={normal}");
        db.close().await.unwrap();
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// `find_by_key_hash` (on SQLite a direct read on the calling thread) returns the application
/// exactly as `get` (SeaORM) does, with its tenant's current settings.
#[tokio::test]
async fn key_lookup_decodes_every_field_and_the_tenant_settings() {
    each_backend(|r| async move {
        let mut t = tenant("settings");
        t.settings = TenantSettings {
            fingerprint_tokens: true,
            deduplicate_tokens: false,
        };
        let mut a = app(t.id, now());
        a.modified_by = Some(Uuid::new_v4());
        a.modified_at = Some(now());
        a.expires_at = Some(now() + Duration::hours(2));
        r.tenants
            .create_with_application(&t, &[1], &a, &hash(9))
            .await
            .unwrap();
        let (found, settings) = r.apps.find_by_key_hash(&hash(9)).await.unwrap().unwrap();
        assert_eq!(found, a);
        assert_eq!(found, r.apps.get(t.id, a.id).await.unwrap().unwrap());
        assert_eq!(settings, t.settings);
        t.settings = TenantSettings {
            fingerprint_tokens: false,
            deduplicate_tokens: true,
        };
        assert!(r.tenants.update(&t).await.unwrap());
        let (_, settings) = r.apps.find_by_key_hash(&hash(9)).await.unwrap().unwrap();
        assert_eq!(settings, t.settings, "a settings change is seen at once");
    })
    .await;
}

/// A tenant with its management key (hash 1), deleted: a tombstone whose rows wait for the purge.
async fn deleted_tenant(r: &Repos) -> Tenant {
    let t = tenant("a");
    r.tenants
        .create_with_application(&t, &[7, 7, 7], &app(t.id, now()), &hash(1))
        .await
        .unwrap();
    assert!(r.tenants.delete(t.id, now()).await.unwrap());
    t
}

#[tokio::test]
async fn a_key_inserted_after_the_delete_opens_nothing_and_is_purged() {
    each_backend(|r| async move {
        let t = deleted_tenant(&r).await;
        // A request already past its key when the delete committed makes another key: its
        // insert still meets the tombstone, so the foreign key lets it in.
        r.apps.insert(&app(t.id, now()), &hash(2)).await.unwrap();
        assert!(r.apps.find_by_key_hash(&hash(2)).await.unwrap().is_none());
        let keyed = common::key_and_token(&r.apps, &hash(2), "tok", now()).await;
        assert!(keyed.is_none(), "the keyed read opens nothing");
        let also = AlsoRead {
            token: Some("t".into()),
            reactor: Some(Uuid::now_v7()),
            search: None,
        };
        let reacting = r
            .apps
            .find_by_key_hash_also(&hash(2), &also, now())
            .await
            .unwrap();
        assert!(reacting.is_none(), "nor does the keyed reactor read");
        // The late key goes first, then the tombstone, one row a call.
        assert_eq!(r.tenants.purge_deleted(1).await.unwrap(), 1);
        assert_eq!(r.tenants.purge_deleted(1).await.unwrap(), 1);
        assert_eq!(r.tenants.purge_deleted(1).await.unwrap(), 0);
        assert!(r.tenants.list().await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn a_key_inserted_after_the_purge_is_gone_not_a_failure() {
    each_backend(|r| async move {
        let t = deleted_tenant(&r).await;
        while r.tenants.purge_deleted(100).await.unwrap() > 0 {}
        // A request past its key check before the delete, whose insert comes after the purge:
        // the tenant row is gone, and the port says so (the use case answers 404, not 500).
        let late = r.apps.insert(&app(t.id, now()), &hash(2)).await;
        assert!(matches!(late, Err(RepoError::Gone(_))), "{late:?}");
        assert!(r.apps.find_by_key_hash(&hash(2)).await.unwrap().is_none());
    })
    .await;
}
