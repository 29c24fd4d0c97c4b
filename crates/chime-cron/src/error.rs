//! Errors of schedule parsing.

use std::fmt;

/// A field of a Quartz cron expression, in expression order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CronField {
    /// Field 1, seconds (0-59).
    Second,
    /// Field 2, minutes (0-59).
    Minute,
    /// Field 3, hours (0-23).
    Hour,
    /// Field 4, day of month (1-31, `L`, `W`).
    DayOfMonth,
    /// Field 5, month (1-12 or JAN-DEC).
    Month,
    /// Field 6, day of week (1-7 or SUN-SAT, 1 = Sunday; `L`, `#`).
    DayOfWeek,
    /// Field 7 (optional), year.
    Year,
}

impl CronField {
    /// All fields in expression order (index = position in the expression).
    pub const ALL: [CronField; 7] = [
        CronField::Second,
        CronField::Minute,
        CronField::Hour,
        CronField::DayOfMonth,
        CronField::Month,
        CronField::DayOfWeek,
        CronField::Year,
    ];

    /// The name used in error messages, e.g. `day-of-week`.
    pub fn name(self) -> &'static str {
        match self {
            CronField::Second => "second",
            CronField::Minute => "minute",
            CronField::Hour => "hour",
            CronField::DayOfMonth => "day-of-month",
            CronField::Month => "month",
            CronField::DayOfWeek => "day-of-week",
            CronField::Year => "year",
        }
    }

    /// The allowed values, as shown in error messages.
    pub(crate) fn range_text(self) -> &'static str {
        match self {
            CronField::Second | CronField::Minute => "0-59",
            CronField::Hour => "0-23",
            CronField::DayOfMonth => "1-31",
            CronField::Month => "1-12 (or JAN-DEC)",
            CronField::DayOfWeek => "1-7 (1=SUN … 7=SAT)",
            CronField::Year => "1970-2199",
        }
    }
}

impl fmt::Display for CronField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a schedule could not be built. `Display` gives a one-line message naming the culprit,
/// e.g. `day-of-week: '8' is out of range 1-7 (1=SUN … 7=SAT)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// The cron expression has fewer than 6 fields.
    #[error("expected 6 or 7 fields, found {found}")]
    FieldCount {
        /// Number of whitespace-separated fields found.
        found: usize,
    },
    /// A field of the cron expression is invalid (as Quartz 2.3.2 would reject it).
    #[error("{field}: {reason}")]
    Field {
        /// The offending field.
        field: CronField,
        /// What is wrong with it.
        reason: String,
    },
    /// The time-zone name is not an IANA zone known to chrono-tz.
    #[error("unknown time zone '{0}'")]
    UnknownZone(String),
    /// A fixed-rate interval could not be parsed or is not positive.
    #[error("fixed rate: {0}")]
    FixedRate(String),
    /// The schedule kind is neither `CRON` nor `FIX_RATE`.
    #[error("unknown schedule kind '{0}' (expected CRON or FIX_RATE)")]
    UnknownKind(String),
}

impl ScheduleError {
    /// The cron field at fault, when the error is about one.
    pub fn field(&self) -> Option<CronField> {
        match self {
            ScheduleError::Field { field, .. } => Some(*field),
            _ => None,
        }
    }

    pub(crate) fn field_err(field: CronField, reason: impl Into<String>) -> ScheduleError {
        ScheduleError::Field {
            field,
            reason: reason.into(),
        }
    }
}
