//! Flushes that fail, hang or are dropped half-way lose nothing and write nothing twice, and a
//! backlog goes in bounded appends.

use super::*;

/// How [`Stuck`]'s `append` behaves.
pub(super) const APPEND: u8 = 0;
pub(super) const HANG_BEFORE_WRITING: u8 = 1;
const HANG_AFTER_WRITING: u8 = 2;
const FAIL_AFTER_WRITING: u8 = 3;
pub(super) const FAIL_BEFORE_WRITING: u8 = 4;
const FAIL_LATER: u8 = 5;

/// The in-memory log whose `append` can hang (a database that never answers), before or after
/// it committed.
#[derive(Default)]
pub(super) struct Stuck {
    store: NoAudit,
    mode: std::sync::atomic::AtomicU8,
    /// Under `FAIL_LATER`: appends written before every next one fails.
    good_appends: std::sync::atomic::AtomicUsize,
}

impl Stuck {
    pub(super) fn set(&self, mode: u8) {
        self.mode.store(mode, std::sync::atomic::Ordering::SeqCst);
    }

    fn written(&self) -> Vec<(Uuid, i64, String)> {
        written_by(&self.store)
    }
}

#[async_trait]
impl AuditRepository for Stuck {
    async fn head(&self, tenant_id: Uuid) -> Result<Option<AuditHead>, RepoError> {
        self.store.head(tenant_id).await
    }
    async fn append(
        &self,
        tenant_id: Uuid,
        expected: Option<&AuditHead>,
        entries: &[AuditEntry],
    ) -> Result<AppendOutcome, RepoError> {
        match self.mode.load(std::sync::atomic::Ordering::SeqCst) {
            HANG_BEFORE_WRITING => std::future::pending().await,
            FAIL_LATER => {
                let left = self
                    .good_appends
                    .fetch_update(
                        std::sync::atomic::Ordering::SeqCst,
                        std::sync::atomic::Ordering::SeqCst,
                        |n| n.checked_sub(1),
                    )
                    .is_ok();
                if left {
                    self.store.append(tenant_id, expected, entries).await
                } else {
                    Err(RepoError::Backend("the database is gone".into()))
                }
            }
            FAIL_BEFORE_WRITING => Err(RepoError::Backend("the database is gone".into())),
            HANG_AFTER_WRITING => {
                self.store.append(tenant_id, expected, entries).await?;
                std::future::pending().await
            }
            FAIL_AFTER_WRITING => {
                self.store.append(tenant_id, expected, entries).await?;
                Err(RepoError::Backend(
                    "the connection was lost during COMMIT".into(),
                ))
            }
            _ => self.store.append(tenant_id, expected, entries).await,
        }
    }
    async fn list(
        &self,
        tenant_id: Uuid,
        filter: &AuditFilter,
        page: PageRequest,
    ) -> Result<Page<AuditEntry>, RepoError> {
        self.store.list(tenant_id, filter, page).await
    }
    async fn chain(
        &self,
        tenant_id: Uuid,
        after: i64,
        limit: u64,
    ) -> Result<Vec<AuditEntry>, RepoError> {
        self.store.chain(tenant_id, after, limit).await
    }
    async fn tenants(&self) -> Result<Vec<Uuid>, RepoError> {
        self.store.tenants().await
    }
}

#[tokio::test]
async fn a_log_read_dropped_during_its_flush_loses_no_event() {
    use futures_util::FutureExt;
    let store = Arc::new(Stuck::default());
    let vault = vault_over(store.clone());
    record(&vault, 100, "a1");
    record(&vault, 200, "b1");
    record(&vault, 100, "a2");
    store.set(HANG_BEFORE_WRITING);
    // The client of `GET /logs` leaves while its flush waits on the database: actix drops the
    // future. Tenant 100's append was in flight; tenant 200's was not started.
    let reader = principal(&[Permission::LogRead]);
    let read = vault.audit.audit_log(
        &reader,
        AuditFilter::default(),
        PageRequest { page: 1, size: 20 },
    );
    assert!(read.now_or_never().is_none(), "the append hangs");
    record(&vault, 100, "a3");
    store.set(APPEND);
    assert_eq!(vault.audit.flush_audit().await.unwrap(), 4);
    let a = Uuid::from_u128(100);
    let b = Uuid::from_u128(200);
    assert_eq!(
        store.written(),
        [
            (a, 1, "a1".into()),
            (a, 2, "a2".into()),
            (a, 3, "a3".into()),
            (b, 1, "b1".into()),
        ],
        "every event written once, the older ahead of the newer"
    );
    assert_eq!(vault.audit.flush_audit().await.unwrap(), 0);
}

#[tokio::test]
async fn a_flush_dropped_after_its_append_committed_writes_nothing_twice() {
    use futures_util::FutureExt;
    let store = Arc::new(Stuck::default());
    let vault = vault_over(store.clone());
    record(&vault, 100, "a1");
    record(&vault, 100, "a2");
    store.set(HANG_AFTER_WRITING);
    assert!(vault.audit.flush_audit().now_or_never().is_none());
    record(&vault, 100, "a3");
    store.set(APPEND);
    assert_eq!(vault.audit.flush_audit().await.unwrap(), 1);
    let a = Uuid::from_u128(100);
    assert_eq!(
        store.written(),
        [
            (a, 1, "a1".into()),
            (a, 2, "a2".into()),
            (a, 3, "a3".into())
        ]
    );
    let report = vault.audit.verify_audit(Some(a)).await.unwrap();
    assert_eq!(report[0].broken, None);
    assert_eq!(report[0].entries, 3);
}

#[tokio::test]
async fn an_append_that_failed_after_it_committed_writes_nothing_twice() {
    let store = Arc::new(Stuck::default());
    let vault = vault_over(store.clone());
    record(&vault, 100, "a1");
    record(&vault, 100, "a2");
    // The append reports a failure (a connection lost during its COMMIT) though it committed.
    store.set(FAIL_AFTER_WRITING);
    assert!(vault.audit.flush_audit().await.is_err());
    record(&vault, 100, "a3");
    store.set(APPEND);
    assert_eq!(vault.audit.flush_audit().await.unwrap(), 1);
    let a = Uuid::from_u128(100);
    assert_eq!(
        store.written(),
        [
            (a, 1, "a1".into()),
            (a, 2, "a2".into()),
            (a, 3, "a3".into())
        ],
        "the committed events are found in the chain, not appended again"
    );
    // An append that failed without committing is written by the next flush.
    record(&vault, 100, "a4");
    store.set(FAIL_BEFORE_WRITING);
    assert!(vault.audit.flush_audit().await.is_err());
    store.set(APPEND);
    assert_eq!(vault.audit.flush_audit().await.unwrap(), 1);
    assert_eq!(store.written().len(), 4);
    let report = vault.audit.verify_audit(Some(a)).await.unwrap();
    assert_eq!(report[0].broken, None);
    assert_eq!(report[0].entries, 4);
}

/// A backlog goes in appends of at most `APPEND_CHUNK` events, in the order recorded; when one
/// of them fails, the tenant's later events wait behind it and the next flush writes them in
/// order.
#[tokio::test]
async fn a_backlog_goes_in_bounded_appends_and_a_failed_one_keeps_the_rest_behind_it() {
    use crate::service::audit::flush::APPEND_CHUNK as CHUNK;
    use std::sync::atomic::Ordering::SeqCst;
    let store = Arc::new(Stuck::default());
    let vault = vault_over(store.clone());
    let total = 2 * CHUNK + 176;
    let recorded: Vec<String> = (0..total).map(|i| format!("a{i}")).collect();
    for id in &recorded {
        record(&vault, 100, id);
    }
    record(&vault, 200, "b0");
    assert_eq!(vault.audit.audit_waiting(), total + 1);
    store.good_appends.store(1, SeqCst);
    store.set(FAIL_LATER);
    assert!(vault.audit.flush_audit().await.is_err());
    assert_eq!(
        store.written().len(),
        CHUNK,
        "the first append alone was written"
    );
    assert_eq!(vault.audit.audit_waiting(), total + 1 - CHUNK);
    record(&vault, 100, "late");
    store.set(APPEND);
    assert_eq!(vault.audit.flush_audit().await.unwrap(), total - CHUNK + 2);
    assert_eq!(vault.audit.audit_waiting(), 0);
    let a = Uuid::from_u128(100);
    let ids: Vec<String> = store
        .written()
        .into_iter()
        .filter(|(tenant, _, _)| *tenant == a)
        .map(|(_, _, id)| id)
        .collect();
    let mut expected = recorded.clone();
    expected.push("late".into());
    assert_eq!(ids, expected, "every event once, in the order recorded");
    // Tenant 100's events in appends of CHUNK, CHUNK and 177; one for tenant 200.
    assert_eq!(store.store.appends.load(SeqCst), 4);
    let report = vault.audit.verify_audit(Some(a)).await.unwrap();
    assert_eq!(report[0].broken, None);
    assert_eq!(report[0].entries, u64::try_from(total + 1).unwrap());
}

/// Tenants that exist, whose lookup hangs while `hang` is set (a database that stopped
/// answering): the flush looks a tenant up after one of its appends failed.
#[derive(Default)]
struct SlowTenants {
    hang: std::sync::atomic::AtomicBool,
}

#[async_trait]
impl TenantKeys for SlowTenants {
    async fn data_key(&self, _: Uuid) -> Result<Option<Vec<u8>>, RepoError> {
        Ok(None)
    }
    async fn data_keys(&self) -> Result<Vec<(Uuid, Vec<u8>)>, RepoError> {
        Ok(Vec::new())
    }
    async fn replace_data_key(&self, _: Uuid, _: &[u8], _: &[u8]) -> Result<bool, RepoError> {
        Ok(false)
    }
    async fn is_live(&self, _: Uuid) -> Result<bool, RepoError> {
        if self.hang.load(std::sync::atomic::Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        Ok(true)
    }
}

#[async_trait]
impl TenantRepository for SlowTenants {
    async fn create_with_application(
        &self,
        _: &Tenant,
        _: &[u8],
        _: &Application,
        _: &KeyHash,
    ) -> Result<(), RepoError> {
        Ok(())
    }
    async fn get(&self, id: Uuid) -> Result<Option<Tenant>, RepoError> {
        Ok(Some(super::tenant_row(id)))
    }
    async fn update(&self, _: &Tenant) -> Result<bool, RepoError> {
        Ok(false)
    }
    async fn delete(&self, _: Uuid, _: OffsetDateTime) -> Result<bool, RepoError> {
        Ok(false)
    }
    async fn purge_deleted(&self, _: u64) -> Result<u64, RepoError> {
        Ok(0)
    }
    async fn any(&self) -> Result<bool, RepoError> {
        Ok(true)
    }
    async fn list(&self) -> Result<Vec<Tenant>, RepoError> {
        Ok(Vec::new())
    }
}

/// A flush dropped while it looks up a tenant whose append failed (the client of `GET /logs`
/// left) keeps every event of that tenant: the failed piece and the pieces behind it.
#[tokio::test]
async fn a_flush_dropped_after_a_failed_piece_keeps_the_pieces_behind_it() {
    use crate::service::audit::flush::APPEND_CHUNK as CHUNK;
    use futures_util::FutureExt;
    use std::sync::atomic::Ordering::SeqCst;
    let store = Arc::new(Stuck::default());
    let tenants = Arc::new(SlowTenants::default());
    let mut p = ports(MockTenants::new(), MockApplications::new());
    p.cipher = Arc::new(mac_cipher());
    p.audit = store.clone();
    p.tenants = tenants.clone();
    let vault = Vault::new(p);
    let total = 2 * CHUNK + 10;
    let recorded: Vec<String> = (0..total).map(|i| format!("a{i}")).collect();
    for id in &recorded {
        record(&vault, 100, id);
    }
    store.good_appends.store(1, SeqCst);
    store.set(FAIL_LATER);
    tenants.hang.store(true, SeqCst);
    assert!(
        vault.audit.flush_audit().now_or_never().is_none(),
        "the lookup after the failed piece hangs, and the flush is dropped there"
    );
    assert_eq!(store.written().len(), CHUNK);
    assert_eq!(vault.audit.audit_waiting(), total - CHUNK);
    tenants.hang.store(false, SeqCst);
    store.set(APPEND);
    assert_eq!(vault.audit.flush_audit().await.unwrap(), total - CHUNK);
    let ids: Vec<String> = store.written().into_iter().map(|(_, _, id)| id).collect();
    assert_eq!(ids, recorded, "every event once, in the order recorded");
}

/// A tenant deleted while its events waited: an append of them that fails is not kept for the
/// next flush (the tenant's log went with it), while a live tenant's failed events are.
#[tokio::test]
async fn a_deleted_tenants_failed_events_are_dropped_and_a_live_ones_kept() {
    let (deleted, live) = (Uuid::from_u128(100), Uuid::from_u128(200));
    let store = Arc::new(Stuck::default());
    let mut tenants = MockTenants::new();
    tenants.expect_is_live().returning(move |id| Ok(id == live));
    let mut p = ports(tenants, MockApplications::new());
    p.cipher = Arc::new(mac_cipher());
    p.audit = store.clone();
    let vault = Vault::new(p);
    for id in ["a0", "a1", "a2"] {
        record(&vault, 100, id);
    }
    record(&vault, 200, "b0");
    record(&vault, 200, "b1");
    store.set(FAIL_BEFORE_WRITING);
    assert!(vault.audit.flush_audit().await.is_err());
    assert_eq!(
        vault.audit.audit_waiting(),
        2,
        "the live tenant's two events wait"
    );
    store.set(APPEND);
    assert_eq!(vault.audit.flush_audit().await.unwrap(), 2);
    let written = store.written();
    assert!(
        written.iter().all(|(tenant, _, _)| *tenant == live),
        "{written:?}"
    );
    assert!(!written.iter().any(|(tenant, _, _)| *tenant == deleted));
    assert_eq!(vault.audit.audit_waiting(), 0);
}
