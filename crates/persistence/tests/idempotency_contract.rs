//! Idempotency repository contract: the same stories on SQLite and PostgreSQL, fresh database
//! each.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use time::{Duration, OffsetDateTime};
use tokenvault_domain::ports::{Claim, IdempotencyKey, IdempotencyRepository};
use tokenvault_persistence::testing::{TestDatabase, backends};
use tokenvault_persistence::{SeaOrmIdempotencyRepository, SeaOrmTenantRepository};
use uuid::Uuid;

mod common;

use common::{now, tenant};

struct Repos {
    db: DatabaseConnection,
    tenants: SeaOrmTenantRepository,
    keys: SeaOrmIdempotencyRepository,
    tenant: Uuid,
}

async fn each_backend<F, Fut>(story: F)
where
    F: Fn(Repos) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for backend in backends() {
        let db = TestDatabase::create(backend).await;
        let tenants = SeaOrmTenantRepository::new(db.db.clone());
        let tenant = tenant(&tenants).await;
        story(Repos {
            db: db.db.connection().clone(),
            tenants,
            keys: SeaOrmIdempotencyRepository::new(db.db.clone()),
            tenant,
        })
        .await;
        db.destroy().await;
    }
}

fn key(tenant_id: Uuid, application_id: Uuid, key: &str) -> IdempotencyKey {
    IdempotencyKey {
        tenant_id,
        application_id,
        key: key.into(),
    }
}

/// A fingerprint with high bits and zero bytes.
const FINGERPRINT: &[u8] = &[0x00, 0xff, 0x80, 0x7f, 0x00, 0x01];
const RESPONSE: &[u8] = &[0xde, 0xad, 0x00, 0xbe, 0xef];

/// Records live for a day.
fn expired_before(now: OffsetDateTime) -> OffsetDateTime {
    now - Duration::days(1)
}

async fn claim(repo: &SeaOrmIdempotencyRepository, k: &IdempotencyKey, fp: &[u8]) -> Claim {
    let t = now();
    repo.claim(k, fp, t, expired_before(t), expired_before(t))
        .await
        .unwrap()
}

async fn count_rows(db: &DatabaseConnection) -> i64 {
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT COUNT(*) AS n FROM idempotency_keys",
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get("", "n").unwrap()
}

#[tokio::test]
async fn claim_in_flight_then_done() {
    each_backend(|r| async move {
        let k = key(r.tenant, Uuid::now_v7(), "order-1");
        assert_eq!(claim(&r.keys, &k, FINGERPRINT).await, Claim::Claimed);
        assert_eq!(
            claim(&r.keys, &k, &[9, 9]).await,
            Claim::InFlight {
                fingerprint: FINGERPRINT.to_vec()
            }
        );
        r.keys.complete(&k, RESPONSE).await.unwrap();
        let done = Claim::Done {
            fingerprint: FINGERPRINT.to_vec(),
            response: RESPONSE.to_vec(),
        };
        assert_eq!(claim(&r.keys, &k, FINGERPRINT).await, done);
        assert_eq!(claim(&r.keys, &k, &[9, 9]).await, done);
    })
    .await;
}

#[tokio::test]
async fn keys_belong_to_their_application() {
    each_backend(|r| async move {
        let k = key(r.tenant, Uuid::now_v7(), "shared");
        let other = key(r.tenant, Uuid::now_v7(), "shared");
        assert_eq!(claim(&r.keys, &k, FINGERPRINT).await, Claim::Claimed);
        assert_eq!(claim(&r.keys, &other, &[2]).await, Claim::Claimed);
        r.keys.complete(&other, &[3]).await.unwrap();
        // Completing one application's key leaves the other's in flight.
        assert_eq!(
            claim(&r.keys, &k, FINGERPRINT).await,
            Claim::InFlight {
                fingerprint: FINGERPRINT.to_vec()
            }
        );
        assert_eq!(
            claim(&r.keys, &other, &[2]).await,
            Claim::Done {
                fingerprint: vec![2],
                response: vec![3]
            }
        );
        // A different key of the same application is separate too.
        let k2 = key(r.tenant, k.application_id, "shared-2");
        assert_eq!(claim(&r.keys, &k2, FINGERPRINT).await, Claim::Claimed);
    })
    .await;
}

#[tokio::test]
async fn release_frees_only_in_flight_keys() {
    each_backend(|r| async move {
        let k = key(r.tenant, Uuid::now_v7(), "retry-me");
        assert_eq!(claim(&r.keys, &k, FINGERPRINT).await, Claim::Claimed);
        r.keys.release(&k).await.unwrap();
        assert_eq!(claim(&r.keys, &k, &[7]).await, Claim::Claimed);
        r.keys.complete(&k, RESPONSE).await.unwrap();
        r.keys.release(&k).await.unwrap();
        assert_eq!(
            claim(&r.keys, &k, FINGERPRINT).await,
            Claim::Done {
                fingerprint: vec![7],
                response: RESPONSE.to_vec()
            }
        );
        // Releasing or completing a key nobody holds does nothing.
        let free = key(r.tenant, k.application_id, "nobody");
        r.keys.release(&free).await.unwrap();
        r.keys.complete(&free, RESPONSE).await.unwrap();
        assert_eq!(claim(&r.keys, &free, FINGERPRINT).await, Claim::Claimed);
    })
    .await;
}

#[tokio::test]
async fn expired_records_are_replaced() {
    each_backend(|r| async move {
        let t = now();
        let old = t - Duration::days(2);
        let done = key(r.tenant, Uuid::now_v7(), "old-done");
        let in_flight = key(r.tenant, done.application_id, "old-in-flight");
        let fresh = key(r.tenant, done.application_id, "fresh");
        for k in [&done, &in_flight] {
            let c = r
                .keys
                .claim(k, &[1], old, expired_before(old), expired_before(old))
                .await;
            assert_eq!(c.unwrap(), Claim::Claimed);
        }
        r.keys.complete(&done, RESPONSE).await.unwrap();
        let c = r
            .keys
            .claim(&fresh, &[1], t - Duration::hours(1), old, old)
            .await;
        assert_eq!(c.unwrap(), Claim::Claimed);
        for k in [&done, &in_flight] {
            let c = r
                .keys
                .claim(k, FINGERPRINT, t, expired_before(t), expired_before(t))
                .await;
            assert_eq!(c.unwrap(), Claim::Claimed);
            assert_eq!(
                claim(&r.keys, k, &[5]).await,
                Claim::InFlight {
                    fingerprint: FINGERPRINT.to_vec()
                }
            );
        }
        // A record exactly at the boundary, or newer, is kept.
        let c = r
            .keys
            .claim(
                &fresh,
                &[2],
                t,
                t - Duration::hours(1),
                t - Duration::hours(1),
            )
            .await;
        assert_eq!(
            c.unwrap(),
            Claim::InFlight {
                fingerprint: vec![1]
            }
        );
    })
    .await;
}

/// A request that died holding its key (no response) frees it after the lease; a done one
/// stays done; the sweep deletes what is past its 24 hours.
#[tokio::test]
async fn stale_in_flight_records_are_replaced_and_old_ones_swept() {
    each_backend(|r| async move {
        let t = now();
        let app = Uuid::now_v7();
        let died = key(r.tenant, app, "died");
        let done = key(r.tenant, app, "done");
        let started = t - Duration::minutes(10);
        for k in [&died, &done] {
            let c = r
                .keys
                .claim(
                    k,
                    &[1],
                    started,
                    expired_before(started),
                    expired_before(started),
                )
                .await;
            assert_eq!(c.unwrap(), Claim::Claimed);
        }
        r.keys.complete(&done, RESPONSE).await.unwrap();
        let lease = t - Duration::minutes(2);
        let c = r.keys.claim(&died, &[1], t, expired_before(t), lease).await;
        assert_eq!(c.unwrap(), Claim::Claimed);
        let c = r.keys.claim(&done, &[1], t, expired_before(t), lease).await;
        assert!(matches!(c.unwrap(), Claim::Done { .. }));
        // The sweep: only records older than its bound go.
        assert_eq!(
            r.keys
                .delete_expired(t - Duration::minutes(5))
                .await
                .unwrap(),
            1
        );
        assert_eq!(
            r.keys
                .delete_expired(t - Duration::minutes(5))
                .await
                .unwrap(),
            0
        );
        let c = r.keys.claim(&done, &[1], t, expired_before(t), lease).await;
        assert_eq!(c.unwrap(), Claim::Claimed);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_claims_have_one_winner() {
    each_backend(|r| async move {
        for round in 0..3 {
            let k = key(r.tenant, Uuid::now_v7(), &format!("race-{round}"));
            let tasks: Vec<_> = (0..8u8)
                .map(|i| {
                    let repo = r.keys.clone();
                    let k = k.clone();
                    tokio::spawn(async move { claim(&repo, &k, &[i]).await })
                })
                .collect();
            let mut claimed = Vec::new();
            let mut in_flight = Vec::new();
            for (i, task) in tasks.into_iter().enumerate() {
                match task.await.unwrap() {
                    Claim::Claimed => claimed.push(i),
                    Claim::InFlight { fingerprint } => in_flight.push(fingerprint),
                    done @ Claim::Done { .. } => panic!("unexpected {done:?}"),
                }
            }
            assert_eq!(claimed.len(), 1, "round {round}: {claimed:?}");
            let winner = u8::try_from(claimed[0]).unwrap();
            assert_eq!(in_flight.len(), 7);
            assert!(in_flight.iter().all(|f| f == &[winner]), "{in_flight:?}");
        }
    })
    .await;
}

#[tokio::test]
async fn deleting_the_tenant_removes_its_records() {
    each_backend(|r| async move {
        let other_tenant = tenant(&r.tenants).await;
        let app = Uuid::now_v7();
        let mine = key(r.tenant, app, "a");
        let mine_done = key(r.tenant, app, "b");
        let theirs = key(other_tenant, Uuid::now_v7(), "a");
        for k in [&mine, &mine_done, &theirs] {
            assert_eq!(claim(&r.keys, k, FINGERPRINT).await, Claim::Claimed);
        }
        r.keys.complete(&mine_done, RESPONSE).await.unwrap();
        assert_eq!(count_rows(&r.db).await, 3);
        assert!(common::delete_tenant(&r.tenants, r.tenant).await);
        assert_eq!(count_rows(&r.db).await, 1);
        assert_eq!(
            claim(&r.keys, &theirs, &[1]).await,
            Claim::InFlight {
                fingerprint: FINGERPRINT.to_vec()
            }
        );
    })
    .await;
}
