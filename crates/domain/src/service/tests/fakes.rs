//! Small stand-ins for the ports no test asserts calls on: `NoSvc`, `NoFormulas`, `NoReactors`,
//! `NoProxies`, `NoIdempotency`, `NoAudit` keeping the log in memory, `NoForwarder`, and
//! `FixedClock`.

use super::*;

/// `req.svc`'s wire for tests that never run code: every call refused.
pub(super) struct NoSvc;

impl SvcWire for NoSvc {
    fn admit(&self, _: Uuid) -> Result<(), serde_json::Value> {
        Err(serde_json::Value::Null)
    }
    fn read(&self, _: &str, _: &[serde_json::Value]) -> Result<SvcCall, serde_json::Value> {
        Err(serde_json::Value::Null)
    }
    fn write(&self, _: SvcAnswer) -> serde_json::Value {
        serde_json::Value::Null
    }
    fn problem(&self, _: TokenError) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// Formula storage for tests that never reach it: everything is missing.
pub(super) struct NoFormulas;

#[async_trait]
impl FormulaRepository for NoFormulas {
    async fn insert(&self, _: &Formula) -> Result<(), RepoError> {
        Err(RepoError::Backend("no formulas in this test".into()))
    }
    async fn get(&self, _: Uuid, _: Uuid) -> Result<Option<Formula>, RepoError> {
        Ok(None)
    }
    async fn get_many(&self, _: Uuid, _: &[Uuid]) -> Result<Vec<Formula>, RepoError> {
        Ok(Vec::new())
    }
    async fn list(
        &self,
        _: Uuid,
        _: &[Uuid],
        _: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<Formula>, RepoError> {
        Ok(Page {
            items: Vec::new(),
            total_items: 0,
            request: page,
        })
    }
    async fn update(&self, _: &Formula, _: bool) -> Result<bool, RepoError> {
        Ok(false)
    }
    async fn lent(&self, _: Uuid, _: Uuid) -> Result<bool, RepoError> {
        Ok(false)
    }
    async fn delete(&self, _: Uuid, _: Uuid) -> Result<FormulaDelete, RepoError> {
        Ok(FormulaDelete::Missing)
    }
}

/// Reactor storage for tests that never reach it: everything is missing.
pub(super) struct NoReactors;

#[async_trait]
impl ReactorRepository for NoReactors {
    async fn insert(&self, _: &Reactor) -> Result<(), RepoError> {
        Err(RepoError::Backend("no reactors in this test".into()))
    }
    async fn get(&self, _: Uuid, _: Uuid) -> Result<Option<Reactor>, RepoError> {
        Ok(None)
    }
    async fn list(
        &self,
        _: Uuid,
        _: &[Uuid],
        _: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<Reactor>, RepoError> {
        Ok(Page {
            items: Vec::new(),
            total_items: 0,
            request: page,
        })
    }
    async fn update(&self, _: &Reactor) -> Result<bool, RepoError> {
        Ok(false)
    }
    async fn delete(&self, _: Uuid, _: Uuid) -> Result<bool, RepoError> {
        Ok(false)
    }
}

/// Proxy storage for tests that never reach it: everything is missing.
pub(super) struct NoProxies;

#[async_trait]
impl ProxyRepository for NoProxies {
    async fn insert(&self, _: &StoredProxy) -> Result<(), RepoError> {
        Err(RepoError::Backend("no proxies in this test".into()))
    }
    async fn get(&self, _: Uuid, _: Uuid) -> Result<Option<StoredProxy>, RepoError> {
        Ok(None)
    }
    async fn find_by_key_hash(&self, _: &KeyHash) -> Result<Option<StoredProxy>, RepoError> {
        Ok(None)
    }
    async fn list(
        &self,
        _: Uuid,
        _: &[Uuid],
        _: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<StoredProxy>, RepoError> {
        Ok(Page {
            items: Vec::new(),
            total_items: 0,
            request: page,
        })
    }
    async fn update(&self, _: &StoredProxy) -> Result<bool, RepoError> {
        Ok(false)
    }
    async fn delete(&self, _: Uuid, _: Uuid) -> Result<bool, RepoError> {
        Ok(false)
    }
}

/// Idempotency storage for tests that never reach it.
pub(super) struct NoIdempotency;

#[async_trait]
impl IdempotencyRepository for NoIdempotency {
    async fn claim(
        &self,
        _: &IdempotencyKey,
        _: &[u8],
        _: OffsetDateTime,
        _: OffsetDateTime,
        _: OffsetDateTime,
    ) -> Result<Claim, RepoError> {
        Err(RepoError::Backend("no idempotency in this test".into()))
    }
    async fn delete_expired(&self, _: OffsetDateTime) -> Result<u64, RepoError> {
        Ok(0)
    }
    async fn complete(&self, _: &IdempotencyKey, _: &[u8]) -> Result<(), RepoError> {
        Err(RepoError::Backend("no idempotency in this test".into()))
    }
    async fn release(&self, _: &IdempotencyKey) -> Result<(), RepoError> {
        Err(RepoError::Backend("no idempotency in this test".into()))
    }
}

/// The audit log in memory: entries and heads per tenant, with the repository's compare and
/// swap; tests may edit `entries` to tamper with the log.
#[derive(Default)]
pub(super) struct NoAudit {
    pub(super) entries: std::sync::Mutex<Vec<AuditEntry>>,
    pub(super) heads: std::sync::Mutex<std::collections::HashMap<Uuid, AuditHead>>,
    /// Appends tried.
    pub(super) appends: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl AuditRepository for NoAudit {
    async fn head(&self, tenant_id: Uuid) -> Result<Option<AuditHead>, RepoError> {
        Ok(self.heads.lock().unwrap().get(&tenant_id).cloned())
    }
    async fn append(
        &self,
        tenant_id: Uuid,
        expected: Option<&AuditHead>,
        entries: &[AuditEntry],
    ) -> Result<AppendOutcome, RepoError> {
        self.appends
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut heads = self.heads.lock().unwrap();
        if heads.get(&tenant_id) != expected {
            return Ok(AppendOutcome::HeadMoved);
        }
        // The unique (tenant, seq) index.
        if self
            .entries
            .lock()
            .unwrap()
            .iter()
            .any(|e| e.event.tenant_id == tenant_id && entries.iter().any(|new| new.seq == e.seq))
        {
            return Ok(AppendOutcome::SeqTaken);
        }
        if let Some(last) = entries.last() {
            heads.insert(
                tenant_id,
                AuditHead {
                    seq: last.seq,
                    hash: last.hash.clone(),
                },
            );
        }
        self.entries.lock().unwrap().extend(entries.iter().cloned());
        Ok(AppendOutcome::Appended)
    }
    async fn list(
        &self,
        tenant_id: Uuid,
        _: &AuditFilter,
        page: PageRequest,
    ) -> Result<Page<AuditEntry>, RepoError> {
        let mut items: Vec<AuditEntry> = self
            .entries
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.event.tenant_id == tenant_id)
            .cloned()
            .collect();
        items.reverse();
        Ok(Page {
            total_items: items.len() as u64,
            items,
            request: page,
        })
    }
    async fn chain(
        &self,
        tenant_id: Uuid,
        after: i64,
        limit: u64,
    ) -> Result<Vec<AuditEntry>, RepoError> {
        let mut items: Vec<AuditEntry> = self
            .entries
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.event.tenant_id == tenant_id && e.seq > after)
            .cloned()
            .collect();
        items.sort_by_key(|e| e.seq);
        items.truncate(usize::try_from(limit).unwrap());
        Ok(items)
    }
    async fn tenants(&self) -> Result<Vec<Uuid>, RepoError> {
        let mut all: Vec<Uuid> = self.heads.lock().unwrap().keys().copied().collect();
        all.extend(
            self.entries
                .lock()
                .unwrap()
                .iter()
                .map(|e| e.event.tenant_id),
        );
        all.sort_unstable();
        all.dedup();
        Ok(all)
    }
}

/// A forwarder for tests that never reach it.
pub(super) struct NoForwarder;

#[async_trait]
impl Forwarder for NoForwarder {
    fn check_destination(&self, _: &str) -> Result<(), String> {
        Ok(())
    }
    async fn forward(&self, _: OutboundRequest) -> Result<OutboundResponse, ForwardError> {
        Err(ForwardError::Unreachable(
            "no forwarding in this test".into(),
        ))
    }
}

pub(super) struct FixedClock;

impl Clock for FixedClock {
    fn now(&self) -> OffsetDateTime {
        now()
    }
    fn new_id(&self) -> Uuid {
        Uuid::now_v7()
    }
    fn sleep(&self, duration: std::time::Duration) -> futures_util::future::BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}
