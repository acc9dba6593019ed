//! Rate limits per application (docs/decisions.md §11): off by default;
//! `TOKENVAULT_RATE_LIMIT_PER_SECOND` = n allows n requests a second with bursts of 2n, per
//! application and per server instance (GCRA, the `governor` crate). Beyond: 429 with
//! `Retry-After` in whole seconds.

use std::num::NonZeroU32;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use uuid::Uuid;

use crate::problem::ApiError;

/// How many checks pass between two prunings of the keys whose allowance is full again.
const PRUNE_EVERY: u64 = 4096;

/// The limiter of one server.
pub struct RateLimit {
    limiter: Option<DefaultKeyedRateLimiter<Uuid>>,
    clock: DefaultClock,
    /// Checks since the last pruning: the limiter keeps a state per key until pruned, so a
    /// stream of distinct keys (new applications, proxies) would grow it without end.
    checks: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for RateLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimit")
            .field("enabled", &self.limiter.is_some())
            .finish_non_exhaustive()
    }
}

impl RateLimit {
    /// `per_second` requests a second per application, bursts of twice that; 0 turns it off.
    pub fn new(per_second: u32) -> Self {
        let limiter = NonZeroU32::new(per_second).map(|rate| {
            let burst = rate.saturating_mul(NonZeroU32::MIN.saturating_add(1));
            RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst))
        });
        Self {
            limiter,
            clock: DefaultClock::default(),
            checks: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The key calls are counted under when no application is known yet (proxy calls): a
    /// name-based UUID of `kind` and the key sent, so it never equals an application's id nor
    /// another kind's.
    pub fn keyed(kind: &str, key: &str) -> Uuid {
        const CALLS: Uuid = Uuid::from_u128(0x6d1c_2b7e_51f4_4c0a_9a3e_7f5b_0c2d_8e41);
        Uuid::new_v5(&Uuid::new_v5(&CALLS, kind.as_bytes()), key.as_bytes())
    }

    /// How many keys the limiter holds a state for (for tests).
    pub fn tracked(&self) -> usize {
        self.limiter.as_ref().map_or(0, RateLimiter::len)
    }

    /// Counts a request of `application`; a 429 with `Retry-After` when it is over its rate.
    pub fn check(&self, application: Uuid) -> Result<(), ApiError> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        let n = self
            .checks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if n % PRUNE_EVERY == PRUNE_EVERY - 1 {
            // A key whose allowance is full again behaves as a new one: forgetting it changes
            // no answer.
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
        limiter.check_key(&application).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            // Whole seconds, rounded up, at least 1.
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            ApiError::too_many_requests(seconds.max(1))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_whose_allowance_is_full_again_are_forgotten() {
        let limit = RateLimit::new(1000);
        for _ in 0..(2 * PRUNE_EVERY) {
            assert!(limit.check(Uuid::new_v4()).is_ok());
        }
        // Without pruning it would hold 8192 states; the last pruning kept only the keys seen
        // within their allowance's refill (a millisecond or two at 1000/s).
        std::thread::sleep(std::time::Duration::from_millis(10));
        for _ in 0..PRUNE_EVERY {
            // Over its burst after 2000: the answers do not matter here, the count does.
            let _ = limit.check(Uuid::nil());
        }
        assert!(limit.tracked() < 100, "{} keys kept", limit.tracked());
    }

    #[test]
    fn a_burst_of_twice_the_rate_then_429_with_retry_after() {
        let limit = RateLimit::new(2);
        let app = Uuid::new_v4();
        for _ in 0..4 {
            assert!(limit.check(app).is_ok());
        }
        let refused = limit.check(app).expect_err("over the burst");
        assert_eq!(refused.status().as_u16(), 429);
        assert_eq!(refused.retry_after(), Some(1));
        // Another application has its own allowance; 0 turns limits off.
        assert!(limit.check(Uuid::new_v4()).is_ok());
        let off = RateLimit::new(0);
        assert_eq!(off.tracked(), 0);
        for _ in 0..100 {
            assert!(off.check(app).is_ok());
        }
    }
}
