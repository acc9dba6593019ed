//! Timestamps as this adapter binds and reads them.
//!
//! SQLite keeps a timestamp as the RFC 3339 text sqlx writes, and that text drops trailing zeros of
//! the fraction: `…:05.12Z` sorts after `…:05.123Z`, and `…:05Z` after both. Every ordering and
//! every expiry comparison on SQLite compares that text, so it must have one width. Every bound
//! timestamp is therefore UTC, whole microseconds plus one nanosecond: RFC 3339 then always prints
//! nine fraction digits ending in `1`, and text order is time order. PostgreSQL keeps microseconds,
//! so the nanosecond never reaches it; `unstamp` drops it from what SQLite returns.
//! Migration 9 rewrote the values stored before.

use time::{OffsetDateTime, UtcOffset};

/// `t` as it is bound: UTC, whole microseconds, plus the one-nanosecond width marker.
pub fn stamp(t: OffsetDateTime) -> OffsetDateTime {
    let t = t.to_offset(UtcOffset::UTC);
    let micros = t.nanosecond() / 1_000 * 1_000;
    t.replace_nanosecond(micros + 1).unwrap_or(t)
}

/// A stored timestamp as the domain sees it: whole microseconds.
pub(crate) fn unstamp(t: OffsetDateTime) -> OffsetDateTime {
    t.replace_nanosecond(t.nanosecond() / 1_000 * 1_000)
        .unwrap_or(t)
}

#[cfg(test)]
mod tests {
    use time::format_description::well_known::Rfc3339;
    use time::macros::datetime;

    use super::*;

    #[test]
    fn stamped_times_print_at_one_width_and_sort_as_text_in_time_order() {
        let times = [
            datetime!(2026-11-23 05:12:05 UTC),
            datetime!(2026-11-23 05:12:05.12 UTC),
            datetime!(2026-11-23 05:12:05.123 UTC),
            datetime!(2026-11-23 05:12:05.123456789 UTC),
            datetime!(2026-11-23 07:12:06.5 +02:00),
        ];
        let texts: Vec<String> = times
            .iter()
            .map(|t| stamp(*t).format(&Rfc3339).unwrap())
            .collect();
        assert!(texts.iter().all(|t| t.len() == texts[0].len()), "{texts:?}");
        let mut sorted = texts.clone();
        sorted.sort();
        assert_eq!(sorted, texts);
        assert_eq!(texts[1], "2026-11-23T05:12:05.120000001Z");
    }

    #[test]
    fn unstamp_returns_the_microseconds() {
        let t = datetime!(2026-11-23 05:12:05.123456789 UTC);
        assert_eq!(unstamp(stamp(t)), datetime!(2026-11-23 05:12:05.123456 UTC));
    }
}
