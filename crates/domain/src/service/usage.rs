//! Monthly active tokens and the usage report (docs/decisions.md §10).

use super::Usage;
use crate::auth::Principal;
use crate::error::Error;
use crate::permission::Permission;
use crate::ports::{TypeCount, month_of};

/// The live usage report.
#[derive(Clone, Debug)]
pub struct UsageReport {
    /// Live tokens per type.
    pub by_type: Vec<TypeCount>,
    /// Distinct tokens active this UTC month.
    pub monthly_active_tokens: u64,
}

impl Usage {
    /// Background job (and the usage report): writes buffered activity in one batch. Flushes
    /// run one at a time: a caller that finds a flush in flight waits for it, so on return
    /// every activity recorded before the call has been written. A failed flush, or one
    /// dropped before it finished (actix drops a report whose client left), puts its batch
    /// back (`Unwritten`); writing it twice is harmless (upserts).
    pub async fn flush_activity(&self) -> Result<usize, Error> {
        let Some(unwritten) = self.activity.take().await else {
            return Ok(0);
        };
        self.store.record_activity(unwritten.batch()).await?;
        Ok(unwritten.written(&month_of(self.clock.now())))
    }

    /// `GET /tenants/self/reports/usage` (docs/decisions.md §10).
    pub async fn usage_report(&self, caller: &Principal) -> Result<UsageReport, Error> {
        caller.require(Permission::ReportRead)?;
        if let Err(e) = self.flush_activity().await {
            tracing::warn!(error = %e, "activity flush before the report failed");
        }
        let now = self.clock.now();
        let by_type = self.store.count_by_type(caller.tenant_id, now).await?;
        let monthly_active_tokens = self
            .store
            .count_active(caller.tenant_id, &month_of(now))
            .await?;
        Ok(UsageReport {
            by_type,
            monthly_active_tokens,
        })
    }

    /// `GET /tenants/self/reports/usage?months=N`: the monthly active tokens of the last
    /// `months` UTC months (this one included, 1 to 24: `MOST_MONTHS`), oldest first, as
    /// `("YYYY-MM", count)` (`report:read`).
    pub async fn usage_history(
        &self,
        caller: &Principal,
        months: u32,
    ) -> Result<Vec<(String, u64)>, Error> {
        caller.require(Permission::ReportRead)?;
        if !(1..=MOST_MONTHS).contains(&months) {
            return Err(Error::invalid("months", "must be between 1 and 24"));
        }
        let mut out = Vec::new();
        for month in months_back(self.clock.now(), months) {
            let count = self.store.count_active(caller.tenant_id, &month).await?;
            out.push((month, count));
        }
        Ok(out)
    }
}

/// The most months one usage history reaches back.
pub const MOST_MONTHS: u32 = 24;

/// The last `n` UTC months up to the one of `now`, oldest first, as [`month_of`] names them.
fn months_back(now: time::OffsetDateTime, n: u32) -> Vec<String> {
    let mut at = now.to_offset(time::UtcOffset::UTC);
    let mut months = Vec::new();
    for _ in 0..n {
        months.push(month_of(at));
        // The last day of the month before: its day 1, less a day.
        at = at
            .replace_day(1)
            .map_or(at, |first| first - time::Duration::days(1));
    }
    months.reverse();
    months
}

#[cfg(test)]
mod tests {
    use time::OffsetDateTime;
    use time::macros::datetime;

    use super::*;

    #[test]
    fn a_history_reaches_back_across_years() {
        let now = datetime!(2027-02-10 12:00 UTC);
        assert_eq!(
            months_back(now, 4),
            ["2026-11", "2026-12", "2027-01", "2027-02"]
        );
        assert_eq!(months_back(now, 1), ["2027-02"]);
        assert_eq!(
            months_back(datetime!(2026-12-01 00:30 +01:00), 2),
            ["2026-10", "2026-11"]
        );
    }

    #[test]
    pub(super) fn months_are_utc_calendar_months() {
        let t = OffsetDateTime::from_unix_timestamp(1_801_000_000).unwrap();
        assert_eq!(month_of(t), "2027-01");
        assert_eq!(month_of(datetime!(2026-11-30 23:30 -01:00)), "2026-12");
        assert_eq!(month_of(datetime!(2026-12-01 00:30 +01:00)), "2026-11");
        assert_eq!(month_of(datetime!(0999-01-01 00:00 UTC)), "0999-01");
    }
}
