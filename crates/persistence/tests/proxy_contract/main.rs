//! Proxy repository contract: the same stories on SQLite and PostgreSQL, fresh database each.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::collections::BTreeMap;

use time::{Duration, OffsetDateTime};
use tokenvault_domain::application::KeyHash;
use tokenvault_domain::page::{Page, PageRequest};
use tokenvault_domain::ports::StoredProxy;
use tokenvault_domain::proxy::Proxy;
use tokenvault_persistence::testing::{TestDatabase, read_paths};
use tokenvault_persistence::{SeaOrmProxyRepository, SeaOrmTenantRepository};
use uuid::Uuid;

#[path = "../common/mod.rs"]
mod common;
mod key_reads;
mod lists;
mod tenancy;
mod writes;

use common::tenant;

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
