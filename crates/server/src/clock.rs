//! The clock the use cases run on.

use time::OffsetDateTime;
use tokenvault_domain::ports::Clock;
use uuid::Uuid;

/// Wall-clock time (microsecond precision, as the databases keep) and UUIDv7 identifiers.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        let now = OffsetDateTime::now_utc();
        now.replace_nanosecond(now.nanosecond() / 1_000 * 1_000)
            .unwrap_or(now)
    }

    fn new_id(&self) -> Uuid {
        Uuid::now_v7()
    }

    fn sleep(&self, duration: std::time::Duration) -> futures_util::future::BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}
