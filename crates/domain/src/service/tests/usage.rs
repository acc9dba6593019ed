//! Token activity: a flush dropped while it writes (the report's client left) keeps its batch.

use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::FutureExt;

use super::*;
use crate::ports::month_of;

/// Usage storage that records activity, and can hang while doing so.
#[derive(Default)]
struct Activity {
    hang: AtomicBool,
    recorded: std::sync::Mutex<Vec<(Uuid, String, String)>>,
}

#[async_trait]
impl UsageRepository for Activity {
    async fn count_by_type(&self, _: Uuid, _: OffsetDateTime) -> Result<Vec<TypeCount>, RepoError> {
        Ok(Vec::new())
    }
    async fn record_activity(&self, entries: &[(Uuid, String, String)]) -> Result<(), RepoError> {
        if self.hang.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        self.recorded.lock().unwrap().extend_from_slice(entries);
        Ok(())
    }
    async fn count_active(&self, tenant_id: Uuid, month: &str) -> Result<u64, RepoError> {
        let recorded = self.recorded.lock().unwrap();
        Ok(recorded
            .iter()
            .filter(|(t, m, _)| *t == tenant_id && m == month)
            .count() as u64)
    }
}

/// Tokens created in an earlier month, as reads note them.
fn older<const N: usize>(ids: [&str; N]) -> impl Iterator<Item = (&str, OffsetDateTime)> {
    ids.into_iter().map(|id| (id, OffsetDateTime::UNIX_EPOCH))
}

#[tokio::test]
async fn a_token_created_this_month_is_not_recorded_active_again() {
    // The store counts a token in the month of its creation; an activity row for it would
    // count it twice.
    let store = Arc::new(Activity::default());
    let mut p = ports(MockTenants::new(), MockApplications::new());
    p.usage = store.clone();
    let vault = Vault::new(p);
    let tenant = Uuid::from_u128(100);
    let now = super::now();
    let start_of_month = now
        .replace_day(1)
        .unwrap()
        .replace_time(time::Time::MIDNIGHT);
    let last_month = start_of_month - time::Duration::microseconds(1);
    vault.tokens.shared.record_active(
        tenant,
        [("new", now), ("first", start_of_month), ("old", last_month)],
    );
    assert_eq!(vault.usage.flush_activity().await.unwrap(), 1);
    let recorded = store.recorded.lock().unwrap().clone();
    assert_eq!(recorded, [(tenant, month_of(now), "old".to_string())]);
}

#[tokio::test]
async fn a_usage_report_dropped_during_its_flush_loses_no_activity() {
    let store = Arc::new(Activity::default());
    let mut p = ports(MockTenants::new(), MockApplications::new());
    p.usage = store.clone();
    let vault = Vault::new(p);
    let tenant = Uuid::from_u128(100);
    vault
        .tokens
        .shared
        .record_active(tenant, older(["tok-1", "tok-2"]));
    store.hang.store(true, Ordering::SeqCst);
    let caller = principal(&[Permission::ReportRead]);
    // The report's client leaves while the flush waits on the database: actix drops it.
    assert!(vault.usage.usage_report(&caller).now_or_never().is_none());
    vault.tokens.shared.record_active(tenant, older(["tok-3"]));
    store.hang.store(false, Ordering::SeqCst);
    let report = vault.usage.usage_report(&caller).await.unwrap();
    assert_eq!(report.monthly_active_tokens, 3);
    let mut ids: Vec<String> = store
        .recorded
        .lock()
        .unwrap()
        .iter()
        .map(|(_, _, id)| id.clone())
        .collect();
    ids.sort();
    assert_eq!(ids, ["tok-1", "tok-2", "tok-3"]);
}

#[tokio::test]
async fn activity_waiting_past_its_bound_is_dropped_and_the_rest_written() {
    // The bound is 3 under test (1,000,000 in a build): a database unreachable for long
    // under load must not grow the buffer without end.
    let store = Arc::new(Activity::default());
    let mut p = ports(MockTenants::new(), MockApplications::new());
    p.usage = store.clone();
    let vault = Vault::new(p);
    let tenant = Uuid::from_u128(100);
    vault
        .tokens
        .shared
        .record_active(tenant, older(["tok-1", "tok-2"]));
    // A repeat takes no place; past the bound the new ones are dropped.
    vault
        .tokens
        .shared
        .record_active(tenant, older(["tok-1", "tok-3", "tok-4", "tok-5"]));
    assert_eq!(vault.usage.flush_activity().await.unwrap(), 3);
    let mut ids: Vec<String> = store
        .recorded
        .lock()
        .unwrap()
        .iter()
        .map(|(_, _, id)| id.clone())
        .collect();
    ids.sort();
    assert_eq!(ids, ["tok-1", "tok-2", "tok-3"]);
    // Once written, there is room again.
    vault.tokens.shared.record_active(tenant, older(["tok-4"]));
    assert_eq!(vault.usage.flush_activity().await.unwrap(), 1);
}
