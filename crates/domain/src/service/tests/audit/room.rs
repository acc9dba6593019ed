//! Back-pressure (`service/audit/room.rs`): a request of a tenant whose log is behind waits,
//! once admitted (`Authenticator::room`), until the flush makes room, and is refused if it does
//! not come in time; no other tenant waits, nor one whose appends fail.

use futures_util::FutureExt;

use super::flush::{APPEND, FAIL_BEFORE_WRITING, HANG_BEFORE_WRITING, Stuck};
use super::*;
use crate::service::audit::room::{MAX_WAIT, MAX_WAITERS};

const A: u128 = 100;
const B: u128 = 200;

/// A vault over `store`, its tenants' high-water mark at three events.
fn behind_vault(store: Arc<Stuck>) -> Vault {
    let vault = vault_over(store);
    vault.audit.set_high_water(3);
    vault
}

/// Lets every other task run as far as it can.
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn a_request_of_a_tenant_behind_waits_for_the_flush_and_other_tenants_do_not() {
    let store = Arc::new(Stuck::default());
    let vault = behind_vault(store.clone());
    for i in 0..2 {
        record(&vault, A, &format!("a{i}"));
    }
    vault
        .auth
        .room(Uuid::from_u128(A))
        .await
        .expect("below the mark: no wait");
    record(&vault, A, "a2");
    for i in 0..5 {
        record(&vault, B, &format!("b{i}"));
    }
    // Tenant B is past the mark too, but only A's request is asked about.
    let waiting = tokio::spawn({
        let vault = vault.clone();
        async move { vault.auth.room(Uuid::from_u128(A)).await }
    });
    settle().await;
    assert!(
        !waiting.is_finished(),
        "three events waiting: the request waits"
    );
    // A flush whose append hangs holds the events in flight: they still count.
    store.set(HANG_BEFORE_WRITING);
    let hanging = tokio::spawn({
        let vault = vault.clone();
        async move { vault.audit.flush_audit().await }
    });
    settle().await;
    assert!(
        !waiting.is_finished(),
        "taken by a flush, not written: still waiting"
    );
    assert_eq!(vault.audit.audit_waiting(), 8, "in flight, still in memory");
    assert!(
        vault.auth.room(Uuid::from_u128(A)).now_or_never().is_none(),
        "events in flight count toward the mark"
    );
    hanging.abort();
    let _ = hanging.await;
    store.set(APPEND);
    assert_eq!(vault.audit.flush_audit().await.unwrap(), 8);
    tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
        .await
        .expect("the flush wakes the request")
        .unwrap()
        .expect("room made");
    assert_eq!(vault.audit.audit_refusals(), 0);
    // Tenant A's room says nothing of B's: B waits alone.
    for i in 0..3 {
        record(&vault, B, &format!("c{i}"));
    }
    vault
        .auth
        .room(Uuid::from_u128(A))
        .await
        .expect("A has room while B is behind");
}

#[tokio::test(start_paused = true)]
async fn a_request_whose_tenant_stays_behind_is_refused_after_the_wait() {
    let store = Arc::new(Stuck::default());
    let vault = behind_vault(store.clone());
    for i in 0..3 {
        record(&vault, A, &format!("a{i}"));
    }
    let started = tokio::time::Instant::now();
    let refused = vault.auth.room(Uuid::from_u128(A)).await;
    assert!(matches!(refused, Err(Error::Overloaded(_))), "{refused:?}");
    assert!(started.elapsed() >= MAX_WAIT);
    assert_eq!(vault.audit.audit_refusals(), 1);
    // The unkeyed path (a proxy that requires no key) is held the same way.
    let refused = vault.auth.room(Uuid::from_u128(A)).await;
    assert!(matches!(refused, Err(Error::Overloaded(_))));
    assert_eq!(vault.audit.audit_refusals(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_tenant_whose_appends_fail_does_not_wait_and_waits_again_once_they_succeed() {
    let store = Arc::new(Stuck::default());
    let vault = behind_vault(store.clone());
    for i in 0..3 {
        record(&vault, A, &format!("a{i}"));
    }
    store.set(FAIL_BEFORE_WRITING);
    assert!(vault.audit.flush_audit().await.is_err());
    assert_eq!(vault.audit.audit_waiting(), 3, "kept for the next flush");
    // The flush makes no room for it: its requests run (its events then wait within their
    // bound, as before back-pressure).
    vault
        .auth
        .room(Uuid::from_u128(A))
        .await
        .expect("a failing log does not hold requests");
    assert_eq!(vault.audit.audit_refusals(), 0);
    store.set(APPEND);
    assert_eq!(vault.audit.flush_audit().await.unwrap(), 3);
    for i in 3..6 {
        record(&vault, A, &format!("a{i}"));
    }
    let refused = vault.auth.room(Uuid::from_u128(A)).await;
    assert!(
        matches!(refused, Err(Error::Overloaded(_))),
        "written again: the mark holds again ({refused:?})"
    );
}

#[tokio::test(start_paused = true)]
async fn beyond_its_waiters_bound_a_tenants_request_is_refused_at_once() {
    let store = Arc::new(Stuck::default());
    let vault = behind_vault(store.clone());
    for i in 0..3 {
        record(&vault, A, &format!("a{i}"));
    }
    let waiters: Vec<_> = (0..MAX_WAITERS)
        .map(|_| {
            let vault = vault.clone();
            tokio::spawn(async move { vault.auth.room(Uuid::from_u128(A)).await })
        })
        .collect();
    settle().await;
    assert!(waiters.iter().all(|w| !w.is_finished()));
    let refused = vault.auth.room(Uuid::from_u128(A)).now_or_never();
    assert!(
        matches!(refused, Some(Err(Error::Overloaded(_)))),
        "refused without waiting: {refused:?}"
    );
    vault
        .auth
        .room(Uuid::from_u128(B))
        .now_or_never()
        .expect("another tenant does not wait")
        .expect("and has room");
    assert_eq!(vault.audit.flush_audit().await.unwrap(), 3);
    for waiter in waiters {
        waiter
            .await
            .unwrap()
            .expect("room made: every waiter goes on");
    }
    // The waiters are counted out: a request waits again rather than being refused at once.
    for i in 3..6 {
        record(&vault, A, &format!("a{i}"));
    }
    assert!(vault.auth.room(Uuid::from_u128(A)).now_or_never().is_none());
    assert_eq!(vault.audit.audit_refusals(), 1);
}
