//! When a job or a workflow fires, as input: the four schedule fields both take
//! ([`SchedulePatch`]), checked into a [`Schedule`] the same way for both.

use super::schema::{nullable_enum, schema_of_names, Named};
use super::Invalid;
use crate::calendar::Calendar;
use chime_protocol::{MisfireStrategy, ScheduleType};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// A checked schedule: its type, expression, zone and what missed fires do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// CRON, FIX_RATE, FIX_DELAY or NONE.
    pub schedule_type: ScheduleType,
    /// The cron expression, rate or delay; empty for NONE.
    pub schedule_expr: String,
    /// The IANA zone the expression is read in.
    pub time_zone: String,
    /// What missed fires do.
    pub misfire_strategy: MisfireStrategy,
    /// The business calendar whose business days it fires on; empty: every day.
    pub calendar: String,
}

impl Schedule {
    /// A schedule of these fields (copied from a stored job or workflow).
    pub fn new(kind: ScheduleType, expr: &str, zone: &str, misfire: MisfireStrategy, calendar: &str) -> Schedule {
        Schedule {
            schedule_type: kind,
            schedule_expr: expr.to_owned(),
            time_zone: zone.to_owned(),
            misfire_strategy: misfire,
            calendar: calendar.to_owned(),
        }
    }
}

/// Most further schedules one job may have.
pub const MAX_MORE_SCHEDULES: usize = 8;

/// Longest expression of a further schedule, in bytes (as a job's own).
const MAX_EXPR_BYTES: usize = 255;

/// One of a job's further schedules (`more_schedules`): the job fires at every fire time of
/// its own schedule and of each of these, once per instant even where two meet. Each has its
/// own type, expression and zone (e.g. 09:00 Asia/Shanghai and 18:00 Europe/Berlin).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MoreSchedule {
    /// `CRON` or `FIX_RATE`.
    #[schemars(schema_with = "schema_of_names::<ScheduleType>")]
    pub schedule_type: ScheduleType,
    /// Its cron expression, or fixed-rate seconds (`30`, `1500ms`).
    #[schemars(length(max = 255))]
    pub schedule_expr: String,
    /// Its IANA zone; empty or left out: the job's.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 64))]
    pub time_zone: String,
}

/// Checks a job's further schedules against its own schedule's type (which must be CRON or
/// FIX_RATE to have any) and zone (theirs where they name none), and returns them trimmed.
/// Errors name the entry: `more_schedules[1].schedule_expr`.
pub fn check_more_schedules(
    more: &[MoreSchedule],
    own_type: ScheduleType,
    own_zone: &str,
) -> Result<Vec<MoreSchedule>, Invalid> {
    if more.is_empty() {
        return Ok(Vec::new());
    }
    if more.len() > MAX_MORE_SCHEDULES {
        return Err(Invalid::new(
            "more_schedules",
            format!("at most {MAX_MORE_SCHEDULES} further schedules"),
        ));
    }
    if !matches!(own_type, ScheduleType::Cron | ScheduleType::FixRate) {
        return Err(Invalid::new(
            "more_schedules",
            format!("further schedules need the job's own schedule to be CRON or FIX_RATE, not {own_type}"),
        ));
    }
    more.iter()
        .enumerate()
        .map(|(i, m)| {
            let field = |name: &str| format!("more_schedules[{i}].{name}");
            if !matches!(m.schedule_type, ScheduleType::Cron | ScheduleType::FixRate) {
                return Err(Invalid::new(field("schedule_type"), "must be CRON or FIX_RATE"));
            }
            let checked = MoreSchedule {
                schedule_type: m.schedule_type,
                schedule_expr: m.schedule_expr.trim().to_owned(),
                time_zone: m.time_zone.trim().to_owned(),
            };
            if checked.schedule_expr.len() > MAX_EXPR_BYTES {
                return Err(Invalid::new(field("schedule_expr"), "must be at most 255 bytes"));
            }
            let zone = if checked.time_zone.is_empty() {
                own_zone
            } else {
                &checked.time_zone
            };
            check_schedule(checked.schedule_type, &checked.schedule_expr, zone)
                .map_err(|e| Invalid::new(field(&e.field), e.message))?;
            Ok(checked)
        })
        .collect()
}

/// When a schedule of `kind`, `expr` and `zone` fires together with its further schedules
/// `more` (each in its own zone, else `zone`), a fixed rate's grid starting at `anchor_ms`: the
/// one calendar a job's next fire, its first fire on start and the preview are read from.
pub fn calendar_with_more(
    kind: ScheduleType,
    expr: &str,
    zone: &str,
    more: &[MoreSchedule],
    anchor_ms: i64,
) -> Result<Calendar, String> {
    Calendar::parse(kind, expr, zone, anchor_ms)?.with_more(more_parts(more, zone), anchor_ms)
}

/// `cal` keeping to the business calendar `name` whose days are `days` (read with the job or
/// workflow row); a name whose calendar was not found is an error, as a schedule that no longer
/// parses is.
pub fn keeping_to(
    cal: Calendar,
    name: &str,
    days: Option<&std::sync::Arc<crate::business_days::BusinessDays>>,
) -> Result<Calendar, String> {
    if !name.is_empty() && days.is_none() {
        return Err(format!("business calendar '{name}' does not exist"));
    }
    cal.with_business_days(days.cloned())
}

/// The `(type, expression, zone)` of each further schedule, the job's zone where one names
/// none: what [`Calendar::with_more`] takes.
fn more_parts<'a>(
    more: &'a [MoreSchedule],
    job_zone: &'a str,
) -> impl Iterator<Item = (ScheduleType, &'a str, &'a str)> + 'a {
    more.iter().map(move |m| {
        let zone = if m.time_zone.is_empty() { job_zone } else { &m.time_zone };
        (m.schedule_type, m.schedule_expr.as_str(), zone)
    })
}

/// Gives a stored record with the schedule fields (a job, a workflow) its
/// `schedule()`: those fields together, as [`SchedulePatch::apply_to`] takes them for a base.
macro_rules! schedule_fields {
    ($record:ty) => {
        impl $record {
            /// The schedule fields together.
            pub fn schedule(&self) -> $crate::api::Schedule {
                $crate::api::Schedule::new(
                    self.schedule_type,
                    &self.schedule_expr,
                    &self.time_zone,
                    self.misfire_strategy,
                    &self.calendar,
                )
            }
        }
    };
}
pub(crate) use schedule_fields;

/// Input of a schedule, flattened into the bodies and documents of jobs and workflows: each
/// field left out (or `null`) keeps its value on update and takes its default on create
/// (`NONE`, no expression, the admin's zone, `DO_NOTHING`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SchedulePatch {
    /// `CRON`, `FIX_RATE`, `FIX_DELAY` (jobs only) or `NONE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "nullable_enum_of::<ScheduleType>")]
    pub schedule_type: Option<String>,
    /// Cron expression, or fixed-rate (fixed-delay) seconds: `30`, `1500ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_expr: Option<String>,
    /// IANA zone the cron expression is read in (defaults to the admin's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// `DO_NOTHING` (default), `FIRE_ONCE_NOW` or `CATCH_UP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "nullable_enum_of::<MisfireStrategy>")]
    pub misfire_strategy: Option<String>,
    /// The business calendar (`/v1/calendars`) whose business days a CRON or FIX_RATE schedule
    /// fires on, by name; empty: every day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub calendar: Option<String>,
}

fn nullable_enum_of<T: Named>(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
    nullable_enum(schema_of_names::<T>(g))
}

/// `value` parsed as a `T`, or `kept` when left out; an unknown name is refused for `field`.
fn parse_or<T: FromStr>(field: &str, value: &Option<String>, kept: T) -> Result<T, Invalid>
where
    T::Err: std::fmt::Display,
{
    match value {
        Some(v) => v.parse().map_err(|e: T::Err| Invalid::new(field, e.to_string())),
        None => Ok(kept),
    }
}

/// `value` without surrounding whitespace; left out: `kept` (the stored value, on update) or
/// else `default` (on create).
pub(crate) fn text_or(value: &Option<String>, kept: Option<&str>, default: &str) -> String {
    match value {
        Some(v) => v.trim().to_owned(),
        None => kept.unwrap_or(default).to_owned(),
    }
}

impl SchedulePatch {
    /// The schedule `base` (the stored one on update, `None` on create) gets from this input,
    /// checked by [`check_schedule`]; a zone left out on create is `default_zone`.
    pub fn apply_to(&self, base: Option<&Schedule>, default_zone: &str) -> Result<Schedule, Invalid> {
        let schedule_type = parse_or(
            "schedule_type",
            &self.schedule_type,
            base.map_or(ScheduleType::None, |b| b.schedule_type),
        )?;
        let schedule_expr = text_or(&self.schedule_expr, base.map(|b| b.schedule_expr.as_str()), "");
        // An expression sent with NONE (a form that kept the last one typed) is not kept: the
        // schedule has none.
        let schedule_expr = if schedule_type == ScheduleType::None {
            String::new()
        } else {
            schedule_expr
        };
        let time_zone = text_or(&self.time_zone, base.map(|b| b.time_zone.as_str()), default_zone);
        check_schedule(schedule_type, &schedule_expr, &time_zone)?;
        let misfire_strategy = parse_or(
            "misfire_strategy",
            &self.misfire_strategy,
            base.map_or(MisfireStrategy::DoNothing, |b| b.misfire_strategy),
        )?;
        let calendar = text_or(&self.calendar, base.map(|b| b.calendar.as_str()), "");
        // A name given is checked even where it is then dropped: a body is valid or not
        // whatever the schedule type it comes with.
        if self.calendar.is_some() && !calendar.is_empty() {
            super::calendars::check_calendar_name(&calendar).map_err(|e| Invalid::new("calendar", e.message))?;
        }
        // As the expression: a form that kept the calendar picked before does not keep it on
        // a schedule that has no fire times of its own.
        let calendar = if schedule_type == ScheduleType::None {
            String::new()
        } else {
            calendar
        };
        if !calendar.is_empty() && schedule_type == ScheduleType::FixDelay {
            return Err(Invalid::new(
                "calendar",
                "a business calendar applies to CRON and FIX_RATE schedules, not FIX_DELAY",
            ));
        }
        Ok(Schedule {
            schedule_type,
            schedule_expr,
            time_zone,
            misfire_strategy,
            calendar,
        })
    }

    /// Every field given: how a stored schedule is written out in a jobs document.
    pub fn of(schedule: Schedule) -> SchedulePatch {
        SchedulePatch {
            schedule_type: Some(schedule.schedule_type.as_str().to_owned()),
            schedule_expr: Some(schedule.schedule_expr),
            time_zone: Some(schedule.time_zone),
            misfire_strategy: Some(schedule.misfire_strategy.as_str().to_owned()),
            calendar: Some(schedule.calendar),
        }
    }

    /// Every field given, the ones left out with their defaults: a document's entry is the
    /// whole definition, so what it leaves out is reset on update too.
    pub fn or_defaults(&self, default_zone: &str) -> SchedulePatch {
        let given = |v: &Option<String>, default: &str| Some(v.clone().unwrap_or_else(|| default.to_owned()));
        SchedulePatch {
            schedule_type: given(&self.schedule_type, ScheduleType::None.as_str()),
            schedule_expr: given(&self.schedule_expr, ""),
            time_zone: given(&self.time_zone, default_zone),
            misfire_strategy: given(&self.misfire_strategy, MisfireStrategy::DoNothing.as_str()),
            calendar: given(&self.calendar, ""),
        }
    }
}

/// Checks a schedule's zone and expression as the scheduler will read them (the error names
/// the field: `time_zone` or `schedule_expr`).
pub fn check_schedule(schedule_type: ScheduleType, schedule_expr: &str, time_zone: &str) -> Result<(), Invalid> {
    if time_zone.parse::<chrono_tz::Tz>().is_err() {
        return Err(Invalid::new(
            "time_zone",
            format!("unknown time zone '{time_zone}' (use an IANA name such as Europe/Berlin or UTC)"),
        ));
    }
    if schedule_type != ScheduleType::None {
        if schedule_expr.is_empty() {
            return Err(Invalid::new(
                "schedule_expr",
                format!("is required for schedule type {schedule_type}"),
            ));
        }
        Calendar::parse(schedule_type, schedule_expr, time_zone, 0).map_err(|e| Invalid::new("schedule_expr", e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(kind: &str, expr: &str) -> SchedulePatch {
        SchedulePatch {
            schedule_type: Some(kind.to_owned()),
            schedule_expr: Some(expr.to_owned()),
            ..SchedulePatch::default()
        }
    }

    #[test]
    fn left_out_fields_keep_the_stored_ones_or_take_the_defaults() {
        let created = patch("CRON", " 0 0 9 * * ? ").apply_to(None, "Asia/Shanghai").unwrap();
        assert_eq!(created.schedule_expr, "0 0 9 * * ?");
        assert_eq!(created.time_zone, "Asia/Shanghai");
        assert_eq!(created.misfire_strategy, MisfireStrategy::DoNothing);
        let kept = SchedulePatch {
            misfire_strategy: Some("CATCH_UP".into()),
            ..SchedulePatch::default()
        }
        .apply_to(Some(&created), "UTC")
        .unwrap();
        assert_eq!(kept.schedule_type, ScheduleType::Cron);
        assert_eq!(kept.time_zone, "Asia/Shanghai");
        assert_eq!(kept.misfire_strategy, MisfireStrategy::CatchUp);
        // NONE keeps no expression.
        let none = patch("NONE", "0 0 9 * * ?").apply_to(Some(&created), "UTC").unwrap();
        assert_eq!(none.schedule_expr, "");
    }

    #[test]
    fn a_bad_field_is_named() {
        let field = |p: SchedulePatch| p.apply_to(None, "UTC").unwrap_err().field;
        assert_eq!(field(patch("CRONN", "* * * * * ?")), "schedule_type");
        assert_eq!(field(patch("CRON", "61 * * * * ?")), "schedule_expr");
        assert_eq!(field(patch("CRON", "")), "schedule_expr");
        let zone = SchedulePatch {
            time_zone: Some("Mars/Olympus".into()),
            ..patch("CRON", "* * * * * ?")
        };
        assert_eq!(field(zone), "time_zone");
        let misfire = SchedulePatch {
            misfire_strategy: Some("NEVER".into()),
            ..patch("CRON", "* * * * * ?")
        };
        assert_eq!(field(misfire), "misfire_strategy");
        let calendar = |kind: &str, name: &str| SchedulePatch {
            calendar: Some(name.into()),
            ..patch(kind, "30")
        };
        assert_eq!(field(calendar("FIX_DELAY", "CN")), "calendar");
        assert_eq!(field(calendar("FIX_RATE", "no spaces")), "calendar");
        assert_eq!(
            calendar("FIX_RATE", " CN ").apply_to(None, "UTC").unwrap().calendar,
            "CN"
        );
        assert_eq!(calendar("NONE", "CN").apply_to(None, "UTC").unwrap().calendar, "");
        assert_eq!(field(calendar("NONE", &"C".repeat(65))), "calendar");
    }

    #[test]
    fn further_schedules_are_checked_one_by_one() {
        let own = patch("CRON", "0 0 9 * * ?").apply_to(None, "Asia/Shanghai").unwrap();
        let more = |kind: ScheduleType, expr: &str, zone: &str| MoreSchedule {
            schedule_type: kind,
            schedule_expr: expr.to_owned(),
            time_zone: zone.to_owned(),
        };
        let ok = check_more_schedules(
            &[more(ScheduleType::Cron, " 0 0 18 * * ? ", "Europe/Berlin")],
            own.schedule_type,
            &own.time_zone,
        )
        .unwrap();
        assert_eq!(ok[0].schedule_expr, "0 0 18 * * ?");
        let field = |list: &[MoreSchedule], own: &Schedule| {
            check_more_schedules(list, own.schedule_type, &own.time_zone)
                .unwrap_err()
                .field
        };
        let good = more(ScheduleType::Cron, "0 0 18 * * ?", "");
        let bad_expr = more(ScheduleType::Cron, "0 0 25 * * ?", "");
        assert_eq!(
            field(&[good.clone(), bad_expr], &own),
            "more_schedules[1].schedule_expr"
        );
        let bad_zone = more(ScheduleType::Cron, "0 0 18 * * ?", "Mars/Olympus");
        assert_eq!(field(&[bad_zone], &own), "more_schedules[0].time_zone");
        assert_eq!(
            field(&[more(ScheduleType::FixDelay, "30", "")], &own),
            "more_schedules[0].schedule_type"
        );
        assert_eq!(
            field(&vec![good.clone(); MAX_MORE_SCHEDULES + 1], &own),
            "more_schedules"
        );
        let delay = patch("FIX_DELAY", "30").apply_to(None, "UTC").unwrap();
        assert_eq!(field(std::slice::from_ref(&good), &delay), "more_schedules");
        // A further schedule without a zone is read in the job's.
        let list = [good];
        let parts: Vec<_> = more_parts(&list, "Asia/Shanghai").collect();
        assert_eq!(parts, vec![(ScheduleType::Cron, "0 0 18 * * ?", "Asia/Shanghai")]);
    }

    #[test]
    fn a_document_entry_gives_every_field() {
        let full = SchedulePatch::default().or_defaults("Europe/Berlin");
        assert_eq!(full.schedule_type.as_deref(), Some("NONE"));
        assert_eq!(full.time_zone.as_deref(), Some("Europe/Berlin"));
        assert_eq!(full.misfire_strategy.as_deref(), Some("DO_NOTHING"));
        let back = full.apply_to(None, "UTC").unwrap();
        assert_eq!(SchedulePatch::of(back.clone()).apply_to(None, "UTC").unwrap(), back);
    }
}
