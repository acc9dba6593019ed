//! Fairness between tenants: one tenant holds at most its share of the workers, and of the
//! places in the queue, so while it floods slow code the others keep a worker. A call first
//! takes one of its tenant's places here, then a worker.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokenvault_domain::ports::code::CodeError;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

/// The gates of every tenant with a call in flight.
pub struct Gates {
    per_tenant_running: usize,
    per_tenant_queue: usize,
    queue: usize,
    waiting: AtomicUsize,
    tenants: Mutex<HashMap<Uuid, Arc<Gate>>>,
}

struct Gate {
    running: Arc<Semaphore>,
    waiting: AtomicUsize,
}

/// A call's place: it may take a worker. Given back when dropped.
pub struct Admitted<'a> {
    gates: &'a Gates,
    tenant: Uuid,
    gate: Option<Arc<Gate>>,
    _permit: OwnedSemaphorePermit,
}

/// A share of `n`, at least one.
fn share_of(n: usize, share: f64) -> usize {
    let share = if share.is_finite() {
        share.clamp(0.0, 1.0)
    } else {
        1.0
    };
    // Counts of workers and queue places: far below 2^52, the cast is exact.
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let of = (n as f64 * share).floor() as usize;
    of.max(1)
}

impl Gates {
    /// Gates for `workers` workers and `queue` waiting places, `share` of each per tenant.
    pub fn new(workers: usize, queue: usize, share: f64) -> Self {
        Self {
            per_tenant_running: share_of(workers, share),
            per_tenant_queue: share_of(queue, share),
            queue,
            waiting: AtomicUsize::new(0),
            tenants: Mutex::new(HashMap::new()),
        }
    }

    fn gate(&self, tenant: Uuid) -> Arc<Gate> {
        let mut tenants = self.tenants.lock().unwrap_or_else(PoisonError::into_inner);
        tenants
            .entry(tenant)
            .or_insert_with(|| {
                Arc::new(Gate {
                    running: Arc::new(Semaphore::new(self.per_tenant_running)),
                    waiting: AtomicUsize::new(0),
                })
            })
            .clone()
    }

    /// Forgets a tenant's gate nobody holds.
    fn tidy(&self, tenant: Uuid, gate: Arc<Gate>) {
        let mut tenants = self.tenants.lock().unwrap_or_else(PoisonError::into_inner);
        // The map's and this one: nobody else waits or runs.
        if Arc::strong_count(&gate) == 2 {
            tenants.remove(&tenant);
        }
    }

    /// Admits one call of `tenant`, waiting at most `patience` for one of its places.
    ///
    /// # Errors
    /// [`CodeError::Busy`] when the queue, or the tenant's share of it, is full, or no place
    /// freed in time.
    pub async fn admit(&self, tenant: Uuid, patience: Duration) -> Result<Admitted<'_>, CodeError> {
        let gate = self.gate(tenant);
        let permit = match gate.running.clone().try_acquire_owned() {
            Ok(permit) => Ok(permit),
            Err(_) => self.wait(&gate, patience).await,
        };
        match permit {
            Ok(permit) => Ok(Admitted {
                gates: self,
                tenant,
                gate: Some(gate),
                _permit: permit,
            }),
            Err(e) => {
                self.tidy(tenant, gate);
                Err(e)
            }
        }
    }

    async fn wait(
        &self,
        gate: &Gate,
        patience: Duration,
    ) -> Result<OwnedSemaphorePermit, CodeError> {
        let total = self.waiting.fetch_add(1, Ordering::SeqCst);
        let own = gate.waiting.fetch_add(1, Ordering::SeqCst);
        let permit = if total >= self.queue || own >= self.per_tenant_queue {
            Err(CodeError::Busy)
        } else {
            match tokio::time::timeout(patience, gate.running.clone().acquire_owned()).await {
                Ok(Ok(permit)) => Ok(permit),
                _ => Err(CodeError::Busy),
            }
        };
        gate.waiting.fetch_sub(1, Ordering::SeqCst);
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        permit
    }

    /// How many tenants have a call in flight (for tests).
    #[cfg(test)]
    fn tenants(&self) -> usize {
        self.tenants
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        if let Some(gate) = self.gate.take() {
            // The permit is released after this; the count check only needs the Arc gone.
            self.gates.tidy(self.tenant, gate);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_tenant_holds_at_most_its_share_and_others_still_enter() {
        // Four workers, half each: a tenant runs two at once.
        let gates = Gates::new(4, 4, 0.5);
        let flood = Uuid::new_v4();
        let a = gates.admit(flood, Duration::from_millis(10)).await;
        let b = gates.admit(flood, Duration::from_millis(10)).await;
        assert!(a.is_ok() && b.is_ok());
        // A third waits, then gives up.
        let c = gates.admit(flood, Duration::from_millis(20)).await;
        assert!(matches!(c, Err(CodeError::Busy)));
        // Another tenant enters at once.
        let other = gates.admit(Uuid::new_v4(), Duration::from_millis(1)).await;
        assert!(other.is_ok());
        drop((a, b, other));
        assert_eq!(gates.tenants(), 0, "gates nobody holds are forgotten");
    }

    #[tokio::test]
    async fn the_queue_share_refuses_at_once() {
        // One worker, one place per tenant in a queue of two.
        let gates = Arc::new(Gates::new(1, 2, 0.5));
        let tenant = Uuid::new_v4();
        let running = gates.admit(tenant, Duration::from_millis(10)).await;
        assert!(running.is_ok());
        let waiter = {
            let gates = gates.clone();
            tokio::spawn(async move {
                gates
                    .admit(tenant, Duration::from_secs(5))
                    .await
                    .map(|_| ())
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = std::time::Instant::now();
        let refused = gates.admit(tenant, Duration::from_secs(5)).await;
        assert!(matches!(refused, Err(CodeError::Busy)));
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "refused without waiting"
        );
        drop(running);
        assert!(waiter.await.is_ok_and(|r| r.is_ok()));
    }
}
