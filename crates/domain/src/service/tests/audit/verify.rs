//! Events recorded in memory reach the chain on flush, the chain verifies, and an edited, a
//! deleted middle and a deleted last entry, a rewound head and a row planted past it are each
//! found.

use super::*;

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
    assert_eq!(
        results.len(),
        2,
        "the tenant with entries, and the one without a log"
    );
    assert!(results.iter().all(|r| r.broken.is_some()));
}

/// Attack review of 3948bc8: a tenant whose whole log (entries and head) was deleted was not
/// listed, and passed. Every live tenant is verified, and one without a log is broken.
#[tokio::test]
async fn a_live_tenant_without_any_log_is_broken() {
    let (vault, _store) = audit_vault();
    let results = vault.audit.verify_audit(None).await.unwrap();
    let unlogged = results
        .iter()
        .find(|r| r.tenant_id == super::UNLOGGED)
        .expect("every live tenant is verified");
    let broken = unlogged.broken.as_ref().expect("no log is a broken log");
    assert_eq!(broken.seq, 1);
    assert!(broken.reason.contains("no audit log"), "{}", broken.reason);
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
