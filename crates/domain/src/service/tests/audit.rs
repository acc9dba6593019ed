//! The audit log: events recorded in memory reach the chain on flush, the chain verifies, and
//! an edited, a deleted middle and a deleted last entry are each found.

use std::hash::{Hash, Hasher};

use super::*;

fn mac_cipher() -> MockCiph {
    let mut c = MockCiph::new();
    c.expect_has_tenant_key().return_const(true);
    c.expect_fingerprint().returning(|tenant, input| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        tenant.hash(&mut h);
        input.hash(&mut h);
        Ok(format!("{:016x}", h.finish()))
    });
    c
}

fn audit_vault() -> (Vault, Arc<NoAudit>) {
    let store = Arc::new(NoAudit::default());
    (vault_over(store.clone()), store)
}

fn vault_over(audit: Arc<dyn AuditRepository>) -> Vault {
    let mut tenants = MockTenants::new();
    tenants
        .expect_get()
        .returning(|id| Ok(Some(super::tenant_row(id))));
    let mut p = ports(tenants, MockApplications::new());
    p.cipher = Arc::new(mac_cipher());
    p.audit = audit;
    Vault::new(p)
}

async fn recorded(vault: &Vault, n: usize) {
    let mut caller = principal(&[Permission::LogRead]);
    caller.trace_id = Some("trace-1".into());
    for i in 0..n {
        vault
            .tokens
            .shared
            .audit(&caller, "create", "token", [format!("tok-{i}")]);
    }
    assert_eq!(vault.audit.flush_audit().await.unwrap(), n);
}

async fn first_break(vault: &Vault) -> Option<crate::audit::AuditBreak> {
    let mut results = vault
        .audit
        .verify_audit(Some(Uuid::from_u128(100)))
        .await
        .unwrap();
    assert_eq!(results.len(), 1);
    results.remove(0).broken
}

#[tokio::test]
async fn flushed_events_form_a_chain_that_verifies() {
    let (vault, store) = audit_vault();
    recorded(&vault, 3).await;
    recorded(&vault, 2).await;
    let entries = store.entries.lock().unwrap().clone();
    let seqs: Vec<i64> = entries.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5]);
    assert_eq!(entries[0].event.trace_id.as_deref(), Some("trace-1"));
    assert_eq!(entries[0].event.actor_id, Some(Uuid::from_u128(1)));
    assert_eq!(first_break(&vault).await, None);
    // The log reads newest first, and needs log:read.
    let page = PageRequest { page: 1, size: 20 };
    let log = vault
        .audit
        .audit_log(
            &principal(&[Permission::LogRead]),
            AuditFilter::default(),
            page,
        )
        .await
        .unwrap();
    assert_eq!(log.items[0].seq, 5);
    let denied = vault
        .audit
        .audit_log(
            &principal(&[Permission::TenantRead]),
            AuditFilter::default(),
            page,
        )
        .await;
    assert!(matches!(denied, Err(Error::Forbidden)));
}

#[tokio::test]
async fn an_edited_entry_is_named() {
    let (vault, store) = audit_vault();
    recorded(&vault, 4).await;
    let edited_id = {
        let mut entries = store.entries.lock().unwrap();
        entries[2].event.entity_id = "someone-else".into();
        entries[2].event.id
    };
    let broken = first_break(&vault).await.expect("the edit is found");
    assert_eq!(broken.seq, 3);
    assert_eq!(broken.entry_id, Some(edited_id));
}

#[tokio::test]
async fn a_deleted_middle_entry_is_found() {
    let (vault, store) = audit_vault();
    recorded(&vault, 4).await;
    store.entries.lock().unwrap().remove(1);
    let broken = first_break(&vault).await.expect("the gap is found");
    assert_eq!(broken.seq, 2);
    assert!(broken.reason.contains("missing"), "{}", broken.reason);
}

#[tokio::test]
async fn a_deleted_last_entry_is_found() {
    let (vault, store) = audit_vault();
    recorded(&vault, 4).await;
    store.entries.lock().unwrap().pop();
    let broken = first_break(&vault).await.expect("the cut end is found");
    assert_eq!(broken.seq, 4);
}

#[tokio::test]
async fn a_rewound_head_is_never_built_on() {
    let (vault, store) = audit_vault();
    recorded(&vault, 3).await;
    // Someone deletes the last entry and moves the head back onto the one before: the chain
    // alone cannot tell, but this instance knows it wrote sequence 3.
    let rewound = {
        let mut entries = store.entries.lock().unwrap();
        entries.pop();
        entries[1].clone()
    };
    store.heads.lock().unwrap().insert(
        Uuid::from_u128(100),
        AuditHead {
            seq: rewound.seq,
            hash: rewound.hash.clone(),
        },
    );
    vault
        .tokens
        .shared
        .audit(&principal(&[]), "delete", "token", ["t"]);
    assert!(vault.audit.flush_audit().await.is_err());
    assert_eq!(
        store.entries.lock().unwrap().len(),
        2,
        "nothing appended on a rewound head"
    );
    // The report carries the head, to be kept outside the database.
    let report = vault.audit.verify_audit(None).await;
    assert!(
        report.is_err(),
        "verify flushes first and reports the refusal"
    );
}

#[tokio::test]
async fn a_tenant_whose_head_was_deleted_is_still_verified() {
    let (vault, store) = audit_vault();
    recorded(&vault, 2).await;
    store.heads.lock().unwrap().clear();
    let results = vault.audit.verify_audit(None).await.unwrap();
    assert_eq!(results.len(), 1);
    assert!(results[0].broken.is_some());
}

/// A row planted just past the head (sequence head + 1), which no append wrote and the head
/// does not reach: the verifier reads past the head and names it.
#[tokio::test]
async fn an_entry_planted_beyond_the_head_is_named() {
    let (vault, store) = audit_vault();
    recorded(&vault, 3).await;
    let planted = {
        let mut entries = store.entries.lock().unwrap();
        let mut planted = entries[2].clone();
        planted.seq = 4;
        planted.event.id = Uuid::from_u128(4_444);
        entries.push(planted.clone());
        planted
    };
    let broken = first_break(&vault).await.expect("the planted row is found");
    assert_eq!(broken.seq, 4);
    assert_eq!(broken.entry_id, Some(planted.event.id));
    assert!(
        broken.reason.contains("beyond the head"),
        "{}",
        broken.reason
    );
}

/// Entries appended while the verifier walks are read on: the head is read again at the end,
/// and what lies between the two heads is verified, not reported.
#[tokio::test]
async fn entries_appended_during_verification_are_not_a_break() {
    let store = Arc::new(Racing::default());
    let vault = vault_over(store.clone());
    for i in 0..3 {
        record(&vault, 100, &format!("a{i}"));
    }
    vault.audit.flush_audit().await.unwrap();
    // The first head read sees sequence 3; entries 4 and 5 land right after it.
    let late = vault_over(store.clone());
    *store.after_first_head.lock().unwrap() = Some(Box::new(move || {
        record(&late, 100, "a3");
        record(&late, 100, "a4");
        futures_util::FutureExt::now_or_never(late.audit.flush_audit())
            .expect("in memory")
            .unwrap();
    }));
    let report = vault
        .audit
        .verify_audit(Some(Uuid::from_u128(100)))
        .await
        .unwrap();
    assert_eq!(report[0].broken, None, "{:?}", report[0].broken);
    assert_eq!(report[0].entries, 5);
    assert_eq!(report[0].head.as_ref().map(|h| h.seq), Some(5));
}

/// The in-memory log that runs a hook once, right after the first head read of a tenant that
/// has one (another instance appending while the verifier walks).
#[derive(Default)]
struct Racing {
    store: NoAudit,
    #[allow(clippy::type_complexity)]
    after_first_head: std::sync::Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

#[async_trait]
impl AuditRepository for Racing {
    async fn head(&self, tenant_id: Uuid) -> Result<Option<AuditHead>, RepoError> {
        let head = self.store.head(tenant_id).await;
        let hook = self.after_first_head.lock().unwrap().take();
        if let Some(hook) = hook {
            hook();
        }
        head
    }
    async fn append(
        &self,
        tenant_id: Uuid,
        expected: Option<&AuditHead>,
        entries: &[AuditEntry],
    ) -> Result<AppendOutcome, RepoError> {
        self.store.append(tenant_id, expected, entries).await
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

/// A row beyond an unchanged head takes the next entry's place: no other appender can be
/// racing (the head did not move), so trying again is pointless. The flush fails at once,
/// naming a broken chain, keeps the events, and writes them once the row is gone; other
/// tenants' logs go on meanwhile.
#[tokio::test]
async fn a_place_taken_beyond_an_unchanged_head_is_a_broken_chain_not_a_race() {
    let (vault, store) = audit_vault();
    recorded(&vault, 2).await;
    let planted = {
        let mut entries = store.entries.lock().unwrap();
        let mut planted = entries[1].clone();
        planted.seq = 3;
        planted.event.id = Uuid::from_u128(3_333);
        entries.push(planted.clone());
        planted
    };
    store.appends.store(0, std::sync::atomic::Ordering::SeqCst);
    record(&vault, 100, "blocked");
    record(&vault, 200, "elsewhere");
    let failed = vault
        .audit
        .flush_audit()
        .await
        .expect_err("the chain is broken");
    assert!(
        failed.to_string().contains("broken") || format!("{failed:?}").contains("broken"),
        "{failed:?}"
    );
    assert_eq!(
        store.appends.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "one append for each tenant, none tried again"
    );
    assert!(
        store
            .entries
            .lock()
            .unwrap()
            .iter()
            .any(|e| e.event.tenant_id == Uuid::from_u128(200)),
        "another tenant's log goes on"
    );
    // While blocked, its events do not hurry the flusher, and a flush looks past the head
    // instead of building the entries again.
    assert_eq!(vault.audit.audit_backlog(), 0);
    assert!(vault.audit.flush_audit().await.is_err());
    assert_eq!(
        store.appends.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "not appended again while the row is there"
    );
    // The operator removes the row: the kept event is written.
    store
        .entries
        .lock()
        .unwrap()
        .retain(|e| e.event.id != planted.event.id);
    assert_eq!(vault.audit.flush_audit().await.unwrap(), 1);
    assert_eq!(first_break(&vault).await, None);
}

fn written_by(store: &NoAudit) -> Vec<(Uuid, i64, String)> {
    store
        .entries
        .lock()
        .unwrap()
        .iter()
        .map(|e| (e.event.tenant_id, e.seq, e.event.entity_id.clone()))
        .collect()
}

/// The buffer bounds each tenant on its own: one tenant recording far more than the database
/// takes (here: more than the whole buffer holds) loses only its own overflow, counted; every
/// other tenant's events are kept and written.
#[tokio::test]
async fn one_tenants_flood_drops_only_its_own_events() {
    let (vault, store) = audit_vault();
    vault.audit.audit_buffer.pending().limit(10, 25);
    for i in 0..1_000 {
        record(&vault, 100, &format!("flood-{i}"));
    }
    for tenant in [200, 300] {
        for i in 0..3 {
            record(&vault, tenant, &format!("calm-{i}"));
        }
    }
    assert_eq!(vault.audit.flush_audit().await.unwrap(), 16);
    let written = written_by(&store);
    let of = |tenant: u128| {
        written
            .iter()
            .filter(|(t, _, _)| *t == Uuid::from_u128(tenant))
            .map(|(_, _, id)| id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        of(100),
        (0..10).map(|i| format!("flood-{i}")).collect::<Vec<_>>()
    );
    assert_eq!(of(200), ["calm-0", "calm-1", "calm-2"]);
    assert_eq!(of(300), ["calm-0", "calm-1", "calm-2"]);
}

/// Many tenants flooding at once fill the whole buffer: a tenant holding less than the others
/// still gets its events in, in place of the newest events of the tenant holding the most.
#[tokio::test]
async fn a_full_buffer_makes_room_from_the_tenant_holding_the_most() {
    let (vault, store) = audit_vault();
    vault.audit.audit_buffer.pending().limit(10, 25);
    for tenant in [100, 101, 102] {
        for i in 0..20 {
            record(&vault, tenant, &format!("flood-{i}"));
        }
    }
    record(&vault, 200, "calm");
    assert_eq!(vault.audit.audit_backlog(), 25);
    assert_eq!(vault.audit.flush_audit().await.unwrap(), 25);
    let written = written_by(&store);
    let count = |tenant: u128| {
        written
            .iter()
            .filter(|(t, _, _)| *t == Uuid::from_u128(tenant))
            .count()
    };
    assert_eq!(count(200), 1, "the calm tenant's event is kept");
    for tenant in [100, 101, 102] {
        assert!(count(tenant) >= 7, "{tenant}: {}", count(tenant));
    }
}

/// How [`Stuck`]'s `append` behaves.
const APPEND: u8 = 0;
const HANG_BEFORE_WRITING: u8 = 1;
const HANG_AFTER_WRITING: u8 = 2;
const FAIL_AFTER_WRITING: u8 = 3;
const FAIL_BEFORE_WRITING: u8 = 4;
const FAIL_LATER: u8 = 5;

/// The in-memory log whose `append` can hang (a database that never answers), before or after
/// it committed.
#[derive(Default)]
struct Stuck {
    store: NoAudit,
    mode: std::sync::atomic::AtomicU8,
    /// Under `FAIL_LATER`: appends written before every next one fails.
    good_appends: std::sync::atomic::AtomicUsize,
}

impl Stuck {
    fn set(&self, mode: u8) {
        self.mode.store(mode, std::sync::atomic::Ordering::SeqCst);
    }

    fn written(&self) -> Vec<(Uuid, i64, String)> {
        self.store
            .entries
            .lock()
            .unwrap()
            .iter()
            .map(|e| (e.event.tenant_id, e.seq, e.event.entity_id.clone()))
            .collect()
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

fn record(vault: &Vault, tenant: u128, id: &str) {
    let mut caller = principal(&[Permission::LogRead]);
    caller.tenant_id = Uuid::from_u128(tenant);
    vault.tokens.shared.audit(&caller, "create", "token", [id]);
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
    async fn data_key(&self, _: Uuid) -> Result<Option<Vec<u8>>, RepoError> {
        Ok(None)
    }
    async fn data_keys(&self) -> Result<Vec<(Uuid, Vec<u8>)>, RepoError> {
        Ok(Vec::new())
    }
    async fn replace_data_key(&self, _: Uuid, _: &[u8], _: &[u8]) -> Result<bool, RepoError> {
        Ok(false)
    }
    async fn get(&self, id: Uuid) -> Result<Option<Tenant>, RepoError> {
        if self.hang.load(std::sync::atomic::Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
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
