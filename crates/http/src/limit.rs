//! Rate limits per application (docs/decisions.md §11): off by default;
//! `TOKENVAULT_RATE_LIMIT_PER_SECOND` = n allows n requests a second with bursts of 2n, per
//! application and per server instance (GCRA, the `governor` crate). Beyond: 429 with
//! `Retry-After` in whole seconds.

use std::num::NonZeroU32;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use uuid::Uuid;

use crate::problem::ApiError;

/// The limiter of one server.
pub struct RateLimit {
    limiter: Option<DefaultKeyedRateLimiter<Uuid>>,
    clock: DefaultClock,
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
        }
    }

    /// Counts a request of `application`; a 429 with `Retry-After` when it is over its rate.
    pub fn check(&self, application: Uuid) -> Result<(), ApiError> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
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
        for _ in 0..100 {
            assert!(off.check(app).is_ok());
        }
    }
}
