//! When Chime jobs fire: Quartz cron expressions and fixed-rate intervals, in any IANA zone.
//!
//! Chime replaces XXL-JOB, whose scheduler evaluates cron expressions with a copy of Quartz
//! 2.3's `CronExpression`. Users move their jobs over as they are, so an expression must be
//! accepted or rejected exactly as Quartz does and must fire at exactly the same instants,
//! including Quartz's peculiar handling of daylight-saving gaps and overlaps. [`CronExpr`]
//! reproduces Quartz's parser and its search for the next fire time on top of chrono-tz's zone
//! data; the test `tests/quartz_conformance.rs` compares it with the real Quartz jar. Why this
//! is not built on an existing cron crate is explained in `docs/cron.md`.
//!
//! [`Schedule`] puts cron and fixed-rate schedules behind one API:
//!
//! ```
//! use chime_cron::{Schedule, ScheduleKind};
//! let cron = Schedule::parse(ScheduleKind::Cron, "0 */5 * * * ?", "Asia/Shanghai").unwrap();
//! assert_eq!(cron.next_after(1_795_305_600_000), Some(1_795_305_900_000));
//!
//! let every_90s = Schedule::parse(ScheduleKind::FixedRate, "90", "")
//!     .unwrap()
//!     .with_anchor(1_000);
//! assert_eq!(every_90s.iter_after(1_000).take(2).collect::<Vec<_>>(), [91_000, 181_000]);
//! ```
//!
//! Everything here is pure computation: no I/O, no clock (except [`local_zone_name`] and
//! Quartz's year limit, which depends on the current year).

#![deny(missing_docs)]

pub mod batch;
mod calendar;
mod cron;
mod error;
mod fixed;
mod parse;
mod zone;

pub use cron::{max_year, CronExpr};
pub use error::{CronField, ScheduleError};
pub use fixed::FixedRate;

use chrono_tz::Tz;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// The kind of a schedule, as XXL-JOB names it in `schedule_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScheduleKind {
    /// A Quartz cron expression (`CRON`).
    Cron,
    /// A fixed interval (`FIX_RATE`).
    FixedRate,
}

impl ScheduleKind {
    /// XXL-JOB's name: `CRON` or `FIX_RATE`.
    pub fn as_str(self) -> &'static str {
        match self {
            ScheduleKind::Cron => "CRON",
            ScheduleKind::FixedRate => "FIX_RATE",
        }
    }
}

impl fmt::Display for ScheduleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ScheduleKind {
    type Err = ScheduleError;

    /// Accepts `CRON` and `FIX_RATE` (XXL-JOB's names) and `FIXED_RATE`, in any case.
    fn from_str(s: &str) -> Result<ScheduleKind, ScheduleError> {
        match s.trim().to_ascii_uppercase().as_str() {
            "CRON" => Ok(ScheduleKind::Cron),
            "FIX_RATE" | "FIXED_RATE" => Ok(ScheduleKind::FixedRate),
            _ => Err(ScheduleError::UnknownKind(s.to_string())),
        }
    }
}

/// A schedule of either kind: asks when a job fires next.
///
/// Cheap to clone (the cron part is shared).
#[derive(Clone, Debug)]
pub struct Schedule {
    inner: Inner,
}

#[derive(Clone, Debug)]
enum Inner {
    Cron {
        expr: Arc<CronExpr>,
        tz: Tz,
        rules: Arc<zone::ZoneRules>,
    },
    FixedRate(FixedRate),
}

impl Schedule {
    /// Builds a schedule from its XXL-JOB form: `expr` is a Quartz cron expression evaluated in
    /// the IANA zone `zone` (e.g. `Asia/Shanghai`), or a fixed-rate interval (`"30"` = 30 s,
    /// `"30s"`, `"1500ms"`; see [`FixedRate::parse_interval`]) for which `zone` is ignored and
    /// the grid is anchored at the Unix epoch until [`Schedule::with_anchor`] moves it.
    pub fn parse(kind: ScheduleKind, expr: &str, zone: &str) -> Result<Schedule, ScheduleError> {
        match kind {
            ScheduleKind::Cron => Schedule::cron(expr, parse_zone(zone)?),
            ScheduleKind::FixedRate => Schedule::fixed_rate(FixedRate::parse_interval(expr)?, 0),
        }
    }

    /// A cron schedule evaluated in zone `tz`.
    pub fn cron(expr: &str, tz: Tz) -> Result<Schedule, ScheduleError> {
        Ok(Schedule::from_cron(Arc::new(CronExpr::parse(expr)?), tz))
    }

    /// A cron schedule from an already parsed expression.
    pub fn from_cron(expr: Arc<CronExpr>, tz: Tz) -> Schedule {
        Schedule {
            inner: Inner::Cron {
                expr,
                tz,
                rules: zone::rules_for(tz),
            },
        }
    }

    /// A fixed-rate schedule: every `interval_ms` (positive), on the grid through `anchor_ms`.
    pub fn fixed_rate(interval_ms: i64, anchor_ms: i64) -> Result<Schedule, ScheduleError> {
        Ok(Schedule {
            inner: Inner::FixedRate(FixedRate::new(interval_ms, anchor_ms)?),
        })
    }

    /// Moves a fixed-rate grid so that it goes through `anchor_ms` (typically the job's first
    /// scheduled time, so that restarts don't drift the schedule). No effect on cron.
    pub fn with_anchor(self, anchor_ms: i64) -> Schedule {
        match self.inner {
            Inner::FixedRate(r) => Schedule {
                inner: Inner::FixedRate(r.with_anchor(anchor_ms)),
            },
            cron => Schedule { inner: cron },
        }
    }

    /// The kind of this schedule.
    pub fn kind(&self) -> ScheduleKind {
        match self.inner {
            Inner::Cron { .. } => ScheduleKind::Cron,
            Inner::FixedRate(_) => ScheduleKind::FixedRate,
        }
    }

    /// The zone of a cron schedule (`None` for fixed rate).
    pub fn zone(&self) -> Option<Tz> {
        match self.inner {
            Inner::Cron { tz, .. } => Some(tz),
            Inner::FixedRate(_) => None,
        }
    }

    /// The next fire time strictly after `after_ms`, in epoch milliseconds (UTC); `None` when
    /// the schedule has ended (cron: no fire time before Quartz's year limit, see
    /// [`max_year`]).
    ///
    /// Cron follows Quartz: the search starts at the whole second after `after_ms`, so results
    /// are whole seconds. Fixed rate: the first grid point after `after_ms`, or the anchor when
    /// `after_ms` is before it.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        match &self.inner {
            Inner::Cron { expr, rules, .. } => expr.next_after_in(after_ms, rules),
            Inner::FixedRate(r) => r.next_after(after_ms),
        }
    }

    /// Successive fire times strictly after `after_ms`.
    pub fn iter_after(&self, after_ms: i64) -> impl Iterator<Item = i64> + '_ {
        let mut t = after_ms;
        std::iter::from_fn(move || {
            t = self.next_after(t)?;
            Some(t)
        })
    }
}

/// Parses an IANA zone name (case-sensitive, as in the tz database).
pub fn parse_zone(name: &str) -> Result<Tz, ScheduleError> {
    name.parse::<Tz>()
        .map_err(|_| ScheduleError::UnknownZone(name.to_string()))
}

/// The machine's IANA zone name (e.g. `Europe/Berlin`), or `UTC` when it cannot be determined
/// or is not a zone chrono-tz knows.
///
/// The `TZ` environment variable comes first when it names a zone (`Asia/Tokyo`, or the
/// `:Asia/Tokyo` form), as it does for the C library and for Java, whose default zone XXL-JOB
/// schedules in: a container started with `TZ=...` and no `/etc/localtime` then gets the zone
/// its operator asked for.
pub fn local_zone_name() -> String {
    zone_from_env(std::env::var("TZ").ok().as_deref())
        .or_else(|| {
            iana_time_zone::get_timezone()
                .ok()
                .filter(|name| name.parse::<Tz>().is_ok())
        })
        .unwrap_or_else(|| "UTC".to_string())
}

/// The zone a `TZ` value names, if it names one chrono-tz knows. POSIX rule strings such as
/// `CET-1CEST` are not zone names and fall through to the system zone.
fn zone_from_env(tz: Option<&str>) -> Option<String> {
    let name = tz?.trim();
    let name = name.strip_prefix(':').unwrap_or(name);
    let name = name.strip_prefix("/usr/share/zoneinfo/").unwrap_or(name);
    name.parse::<Tz>().is_ok().then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        assert_eq!("CRON".parse::<ScheduleKind>(), Ok(ScheduleKind::Cron));
        assert_eq!("fix_rate".parse::<ScheduleKind>(), Ok(ScheduleKind::FixedRate));
        assert_eq!(ScheduleKind::FixedRate.to_string(), "FIX_RATE");
        assert!("NONE".parse::<ScheduleKind>().is_err());
    }

    #[test]
    fn schedule_api() {
        let s = Schedule::parse(ScheduleKind::Cron, "0 0 12 * * ?", "Asia/Kolkata").unwrap();
        assert_eq!(s.kind(), ScheduleKind::Cron);
        // 12:00 IST is 06:30 UTC.
        assert_eq!(s.next_after(0), Some(23_400_000));
        assert_eq!(s.clone().with_anchor(5).next_after(0), Some(23_400_000));
        let err = Schedule::parse(ScheduleKind::Cron, "0 0 12 * * ?", "Mars/Base").unwrap_err();
        assert_eq!(err.to_string(), "unknown time zone 'Mars/Base'");
        let err = Schedule::parse(ScheduleKind::Cron, "0 0 12 * *", "UTC").unwrap_err();
        assert_eq!(err.to_string(), "expected 6 or 7 fields, found 5");
        let err = Schedule::parse(ScheduleKind::Cron, "0 0 12 ? * 8", "UTC").unwrap_err();
        assert_eq!(err.to_string(), "day-of-week: '8' is out of range 1-7 (1=SUN … 7=SAT)");
        assert_eq!(err.field(), Some(CronField::DayOfWeek));

        let f = Schedule::parse(ScheduleKind::FixedRate, "1500ms", "ignored").unwrap();
        assert_eq!(f.next_after(0), Some(1_500));
        let f = f.with_anchor(100);
        assert_eq!(f.iter_after(100).take(3).collect::<Vec<_>>(), [1_600, 3_100, 4_600]);
    }

    #[test]
    fn schedule_is_send_sync() {
        fn check<T: Send + Sync + Clone + fmt::Debug>() {}
        check::<Schedule>();
        check::<CronExpr>();
        let s = Schedule::cron("0 0 * * * ?", Tz::Europe__London).unwrap();
        let debug = format!("{s:?}");
        assert!(
            debug.contains("CronExpr(\"0 0 * * * ?\")") && debug.len() < 200,
            "{debug}"
        );
    }

    #[test]
    fn local_zone_is_a_zone() {
        assert!(local_zone_name().parse::<Tz>().is_ok());
    }

    #[test]
    fn tz_variable_names_the_zone() {
        assert_eq!(zone_from_env(Some("Asia/Tokyo")).as_deref(), Some("Asia/Tokyo"));
        assert_eq!(
            zone_from_env(Some(":America/New_York")).as_deref(),
            Some("America/New_York")
        );
        assert_eq!(
            zone_from_env(Some("/usr/share/zoneinfo/Europe/London")).as_deref(),
            Some("Europe/London")
        );
        assert_eq!(
            zone_from_env(Some("CET-1CEST")),
            None,
            "a POSIX rule is not a zone name"
        );
        assert_eq!(zone_from_env(Some("")), None);
        assert_eq!(zone_from_env(None), None);
    }
}
