//! Helpers shared by the persistence contract suites (each test binary uses what it needs).

#![allow(dead_code, clippy::unwrap_used)]

use std::collections::BTreeMap;

use time::OffsetDateTime;
use tokenvault_domain::application::{Application, KeyHash};
use tokenvault_domain::page::Page;
use tokenvault_domain::permission::{ApplicationType, Permission};
use tokenvault_domain::ports::{TenantRepository, TokenFilter, Visibility};
use tokenvault_domain::tenant::{Tenant, TenantSettings};
use tokenvault_domain::token::StoredToken;
use tokenvault_persistence::testing::{TestDatabase, read_paths};
use tokenvault_persistence::{
    SeaOrmTenantRepository, SeaOrmTokenRepository, SeaOrmUsageRepository,
};
use uuid::Uuid;

/// Now, at the microsecond precision the databases keep.
pub fn now() -> OffsetDateTime {
    let t = OffsetDateTime::now_utc();
    t.replace_nanosecond(t.nanosecond() / 1000 * 1000).unwrap()
}

/// A new tenant with one management application; its id.
pub async fn tenant(repo: &SeaOrmTenantRepository) -> Uuid {
    let mut h = [0u8; 32];
    h[..16].copy_from_slice(Uuid::new_v4().as_bytes());
    let management = (ApplicationType::Management, vec![Permission::TenantRead]);
    tenant_with(repo, TenantSettings::default(), management, &KeyHash(h))
        .await
        .0
}

/// A new tenant with `settings` and one application of the given type and permissions under
/// key hash `hash`: the tenant's id and the application.
pub async fn tenant_with(
    repo: &SeaOrmTenantRepository,
    settings: TenantSettings,
    (app_type, permissions): (ApplicationType, Vec<Permission>),
    hash: &KeyHash,
) -> (Uuid, Application) {
    let t = Tenant {
        id: Uuid::now_v7(),
        owner_id: Uuid::new_v4(),
        name: "t".into(),
        settings,
        created_by: None,
        created_at: now(),
        modified_by: None,
        modified_at: None,
    };
    let app = Application {
        id: Uuid::now_v7(),
        tenant_id: t.id,
        name: "m".into(),
        app_type,
        permissions,
        rules: vec![],
        created_by: None,
        created_at: now(),
        modified_by: None,
        modified_at: None,
        expires_at: None,
    };
    repo.create_with_application(&t, &[1, 2, 3], &app, hash)
        .await
        .unwrap();
    (t.id, app)
}

/// Deletes the tenant in both steps, as the server does with its purge job: the tombstone,
/// then every batch of its rows; whether it existed.
pub async fn delete_tenant_purged(
    repo: &SeaOrmTenantRepository,
    id: Uuid,
) -> Result<bool, tokenvault_domain::RepoError> {
    let deleted = repo.delete(id, now()).await?;
    // A purge leaves rows another transaction holds (an append in flight) to a later round, as
    // the server's job does; the test waits for those rounds.
    for _ in 0..1000 {
        while repo.purge_deleted(7).await? > 0 {}
        if repo.deleted_count().await? == 0 {
            return Ok(deleted);
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("a deleted tenant is never purged")
}

/// [`delete_tenant_purged`], failing the test on a storage error.
pub async fn delete_tenant(repo: &SeaOrmTenantRepository, id: Uuid) -> bool {
    delete_tenant_purged(repo, id).await.unwrap()
}

/// A stored token (fake ciphertext) of type `token`.
pub fn token(
    tenant_id: Uuid,
    id: &str,
    container: &str,
    created_at: OffsetDateTime,
) -> StoredToken {
    StoredToken {
        id: id.into(),
        tenant_id,
        token_type: "token".into(),
        container: container.into(),
        metadata: BTreeMap::from([("run".to_string(), "r1".to_string())]),
        data: vec![0xde, 0xad, 0xbe, 0xef],
        mask: None,
        fingerprint: None,
        dedup_key: None,
        fingerprint_expression: None,
        created_by: None,
        created_at,
        modified_by: None,
        modified_at: None,
        expires_at: None,
        deduplicate: None,
        search_indexes: Vec::new(),
        search_terms: Vec::new(),
        version: 0,
    }
}

/// A filter that lets everything through.
pub fn filter() -> TokenFilter {
    TokenFilter {
        ids: vec![],
        types: vec![],
        metadata: vec![],
        visibility: Visibility::All,
        parent: None,
    }
}

/// The ids of a page, in order.
pub fn ids(page: &Page<StoredToken>) -> Vec<&str> {
    page.items.iter().map(|t| t.id.as_str()).collect()
}

/// A fresh database per backend with one tenant, and its token repository.
pub struct Repos {
    pub tenants: SeaOrmTenantRepository,
    pub tokens: SeaOrmTokenRepository,
    pub usage: SeaOrmUsageRepository,
    pub tenant: Uuid,
}

/// Runs `story` on each backend, a fresh database each.
pub async fn each_backend<F, Fut>(story: F)
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
            tokens: SeaOrmTokenRepository::new(db.db.clone()),
            usage: SeaOrmUsageRepository::new(db.db.clone()),
            tenant,
        })
        .await;
        db.destroy().await;
    }
}

/// On Citus, `plan` (`explain_*`) runs on one tenant's shards alone, in one task; on a single
/// database there is nothing to check.
pub fn on_one_shard(plan: &[String]) {
    if plan.iter().any(|l| l.contains("Citus Adaptive")) {
        assert!(
            plan.iter().any(|l| l.trim() == "Task Count: 1"),
            "{plan:#?}"
        );
    }
}

/// What a read beside the key must hold: `value` where the path reads ahead (`ahead`), nothing
/// where it does not (a SQLite file whose direct reads are refused, a non-private key).
pub fn beside<T>(ahead: bool, value: T) -> tokenvault_domain::ports::Beside<T> {
    if ahead {
        tokenvault_domain::ports::Beside::Read(value)
    } else {
        tokenvault_domain::ports::Beside::NotRead
    }
}

/// [`ApplicationRepository::find_by_key_hash_also`] asking for the token `id` alone.
pub async fn key_and_token(
    apps: &impl tokenvault_domain::ports::ApplicationRepository,
    hash: &KeyHash,
    id: &str,
    at: OffsetDateTime,
) -> Option<tokenvault_domain::ports::KeyRead> {
    let also = tokenvault_domain::ports::AlsoRead {
        token: Some(id.to_owned()),
        ..Default::default()
    };
    apps.find_by_key_hash_also(hash, &also, at).await.unwrap()
}
