//! Silence windows (maintenance windows) on the wire: a window as the API answers it
//! ([`AlarmSilence`], with whether it is in force now), and the body that creates one
//! ([`AlarmSilenceSpec`]).
//!
//! Checking a body ([`AlarmSilenceSpec::validate`]) gives the [`SilenceDraft`] the store
//! writes: exactly one of a group and a job, and either a one-off window (`starts_at`,
//! `ends_at`) or a recurring one (`cron`, `duration_secs`), each value bounded. Whether the
//! group or job exists is the caller's check ([`crate::center::Admin`]'s operations).

use super::Invalid;
use crate::silence::Window;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Longest name, in characters.
const NAME_CHARS: usize = 64;
/// Longest reason, in characters (the column's size).
const REASON_CHARS: usize = 500;
/// Longest cron expression (the column's size, as a job's `schedule_expr`).
const CRON_CHARS: usize = 128;
/// Longest recurring window: a week.
const MAX_DURATION_SECS: i64 = 7 * 24 * 3600;
/// Longest one-off window: a year, leap years included.
const MAX_ONE_OFF_MS: i64 = 366 * 24 * 3600 * 1000;
/// The last millisecond of year 9999: no window reaches past it.
const LATEST_MS: i64 = 253_402_300_799_999;

/// A silence window: while it is in force, a run of its group or job that fails for good sends
/// no alarm; its `alarm_msg` names the window instead.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(transform = super::schema::exact)]
pub struct AlarmSilence {
    /// Silence id.
    pub id: i64,
    /// Its name (may be empty).
    pub name: String,
    /// Why it was set (may be empty).
    pub reason: String,
    /// The group whose jobs it silences, or `null` when it silences one job.
    pub group_id: Option<i64>,
    /// The job it silences, or `null` when it silences a group.
    pub job_id: Option<i64>,
    /// One-off window: its start, epoch ms; `null` for a recurring window.
    pub starts_at: Option<i64>,
    /// One-off window: its end (excluded), epoch ms; `null` for a recurring window.
    pub ends_at: Option<i64>,
    /// Recurring window: the Quartz cron expression of its starts; `null` for a one-off window.
    pub cron: Option<String>,
    /// Recurring window: how long each window lasts, seconds; `null` for a one-off window.
    pub duration_secs: Option<i64>,
    /// The IANA zone the cron expression is evaluated in, and times are shown in.
    pub time_zone: String,
    /// Whether it is in force now.
    pub active_now: bool,
    /// When the window in force now ends, epoch ms; `null` when none is.
    pub active_until: Option<i64>,
    /// When the next window starts (after now), epoch ms; `null` when none will.
    pub next_start: Option<i64>,
    /// Who created it.
    pub created_by: String,
    /// Creation time, epoch ms.
    pub created_at: i64,
}

/// Input to create a silence: `group_id` or `job_id` (one of them), and either `starts_at`
/// (default: now) and `ends_at`, or `cron` and `duration_secs`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AlarmSilenceSpec {
    /// A name to know it by, at most 64 characters.
    #[schemars(length(max = 64))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Why, at most 500 characters.
    #[schemars(length(max = 500))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Silence the jobs of this group (not with `job_id`).
    #[schemars(range(min = 1))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_id: Option<i64>,
    /// Silence this job (not with `group_id`).
    #[schemars(range(min = 1))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<i64>,
    /// One-off window: its start, epoch ms (default: now).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub starts_at: Option<i64>,
    /// One-off window: its end, epoch ms, after `starts_at` and at most 366 days later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ends_at: Option<i64>,
    /// Recurring window: a Quartz cron expression (seconds first) for each start.
    #[schemars(length(max = 128))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// Recurring window: how long each lasts, 1 second to 7 days.
    #[schemars(range(min = 1, max = 604_800))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_secs: Option<i64>,
    /// IANA zone of `cron` and of the times in messages (default: the admin's `default_tz`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
}

/// A silence as the store writes it: one of `group_id` and `job_id` is 0, and a one-off
/// window has an empty `cron` (and `duration_secs` 0), a recurring one `starts_at` and
/// `ends_at` 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SilenceDraft {
    /// Name.
    pub name: String,
    /// Reason.
    pub reason: String,
    /// The group silenced, or 0.
    pub group_id: i64,
    /// The job silenced, or 0.
    pub job_id: i64,
    /// One-off start, epoch ms.
    pub starts_at: i64,
    /// One-off end, epoch ms.
    pub ends_at: i64,
    /// Recurring starts, or empty.
    pub cron: String,
    /// Recurring length, seconds.
    pub duration_secs: i64,
    /// IANA zone.
    pub time_zone: String,
}

impl AlarmSilenceSpec {
    /// The silence this input makes, checked; `default_zone` stands for a zone left out, `now`
    /// (epoch ms) for a start left out, and a window that would never be in force after `now`
    /// is refused.
    pub fn validate(&self, default_zone: &str, now: i64) -> Result<SilenceDraft, Invalid> {
        let name = self.name.as_deref().unwrap_or("").trim().to_owned();
        check_text("name", &name, NAME_CHARS)?;
        let reason = self.reason.as_deref().unwrap_or("").trim().to_owned();
        check_text("reason", &reason, REASON_CHARS)?;
        let (group_id, job_id) = match (self.group_id, self.job_id) {
            (Some(_), Some(_)) => {
                return Err(Invalid::new(
                    "group_id",
                    "give group_id or job_id, not both: a silence covers one group or one job",
                ))
            }
            (None, None) => return Err(Invalid::new("group_id", "group_id or job_id is required")),
            (Some(g), None) => (positive("group_id", g)?, 0),
            (None, Some(j)) => (0, positive("job_id", j)?),
        };
        let time_zone = self
            .time_zone
            .as_deref()
            .map(str::trim)
            .filter(|z| !z.is_empty())
            .unwrap_or(default_zone)
            .to_owned();
        if time_zone.parse::<chrono_tz::Tz>().is_err() {
            return Err(Invalid::new(
                "time_zone",
                format!("unknown time zone '{time_zone}' (use an IANA name such as Europe/Berlin or UTC)"),
            ));
        }
        let mut draft = SilenceDraft {
            name,
            reason,
            group_id,
            job_id,
            starts_at: 0,
            ends_at: 0,
            cron: String::new(),
            duration_secs: 0,
            time_zone,
        };
        match self.cron.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
            Some(cron) => self.recurring(&mut draft, cron, now)?,
            None => self.one_off(&mut draft, now)?,
        }
        Ok(draft)
    }

    fn recurring(&self, draft: &mut SilenceDraft, cron: &str, now: i64) -> Result<(), Invalid> {
        for (field, given) in [("starts_at", self.starts_at), ("ends_at", self.ends_at)] {
            if given.is_some() {
                return Err(Invalid::new(
                    field,
                    "a recurring window (cron) takes duration_secs, not starts_at or ends_at",
                ));
            }
        }
        if cron.chars().count() > CRON_CHARS {
            return Err(Invalid::new("cron", format!("must be at most {CRON_CHARS} characters")));
        }
        let duration_secs = self
            .duration_secs
            .ok_or_else(|| Invalid::new("duration_secs", "is required with cron: how long each window lasts"))?;
        if !(1..=MAX_DURATION_SECS).contains(&duration_secs) {
            return Err(Invalid::new(
                "duration_secs",
                format!("must be between 1 and {MAX_DURATION_SECS} (7 days)"),
            ));
        }
        let window = Window::recurring(cron, &draft.time_zone, duration_secs).map_err(|e| Invalid::new("cron", e))?;
        if window.in_force(now).is_none() && window.next_start(now).is_none() {
            return Err(Invalid::new("cron", "never starts again"));
        }
        draft.cron = cron.to_owned();
        draft.duration_secs = duration_secs;
        Ok(())
    }

    fn one_off(&self, draft: &mut SilenceDraft, now: i64) -> Result<(), Invalid> {
        if self.duration_secs.is_some() {
            return Err(Invalid::new(
                "duration_secs",
                "only a recurring window (cron) takes duration_secs; a one-off window takes ends_at",
            ));
        }
        let starts_at = self.starts_at.unwrap_or(now);
        if !(0..=LATEST_MS).contains(&starts_at) {
            return Err(Invalid::new("starts_at", "must be a time in epoch milliseconds"));
        }
        let ends_at = self.ends_at.ok_or_else(|| {
            Invalid::new(
                "ends_at",
                "is required: a one-off window takes ends_at (epoch ms), a recurring one cron and duration_secs",
            )
        })?;
        if ends_at <= starts_at {
            return Err(Invalid::new("ends_at", "must be after starts_at"));
        }
        if ends_at - starts_at > MAX_ONE_OFF_MS {
            return Err(Invalid::new("ends_at", "a one-off window lasts at most 366 days"));
        }
        if ends_at <= now {
            return Err(Invalid::new("ends_at", "is in the past (times are epoch milliseconds)"));
        }
        draft.starts_at = starts_at;
        draft.ends_at = ends_at;
        Ok(())
    }
}

/// Refuses a text longer than `max` characters, or holding control characters.
fn check_text(field: &str, text: &str, max: usize) -> Result<(), Invalid> {
    if text.chars().count() > max {
        return Err(Invalid::new(field, format!("must be at most {max} characters")));
    }
    if text.chars().any(char::is_control) {
        return Err(Invalid::new(field, "must not hold control characters"));
    }
    Ok(())
}

fn positive(field: &str, id: i64) -> Result<i64, Invalid> {
    if id > 0 {
        Ok(id)
    } else {
        Err(Invalid::new(field, "must be a positive id"))
    }
}

impl SilenceDraft {
    /// The window, to ask when it is in force. A stored expression that no longer parses (it
    /// was checked when stored) is an error with why.
    pub fn window(&self) -> Result<Window, String> {
        if self.cron.is_empty() {
            Ok(Window::OneOff {
                starts_at: self.starts_at,
                ends_at: self.ends_at,
            })
        } else {
            Window::recurring(&self.cron, &self.time_zone, self.duration_secs)
        }
    }

    /// The answer for this silence as of `now` (epoch ms).
    pub fn shown(&self, id: i64, created_by: &str, created_at: i64, now: i64) -> AlarmSilence {
        let window = self.window().ok();
        let active_until = window.as_ref().and_then(|w| w.in_force(now));
        let recurring = !self.cron.is_empty();
        AlarmSilence {
            id,
            name: self.name.clone(),
            reason: self.reason.clone(),
            group_id: (self.group_id > 0).then_some(self.group_id),
            job_id: (self.job_id > 0).then_some(self.job_id),
            starts_at: (!recurring).then_some(self.starts_at),
            ends_at: (!recurring).then_some(self.ends_at),
            cron: recurring.then(|| self.cron.clone()),
            duration_secs: recurring.then_some(self.duration_secs),
            time_zone: self.time_zone.clone(),
            active_now: active_until.is_some(),
            active_until,
            next_start: window.as_ref().and_then(|w| w.next_start(now)),
            created_by: created_by.to_owned(),
            created_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_790_000_000_000;

    fn group(g: i64) -> AlarmSilenceSpec {
        AlarmSilenceSpec {
            group_id: Some(g),
            ..AlarmSilenceSpec::default()
        }
    }

    #[test]
    fn one_off_and_recurring_are_accepted() {
        let one_off = AlarmSilenceSpec {
            name: Some(" db upgrade ".into()),
            ends_at: Some(NOW + 3_600_000),
            ..group(3)
        }
        .validate("Europe/Berlin", NOW)
        .unwrap();
        assert_eq!(
            (one_off.name.as_str(), one_off.starts_at, one_off.time_zone.as_str()),
            ("db upgrade", NOW, "Europe/Berlin"),
            "starts now, in the default zone"
        );
        let shown = one_off.shown(7, "alice", NOW, NOW + 1);
        assert!(shown.active_now);
        assert_eq!(
            (shown.active_until, shown.next_start, shown.cron, shown.job_id),
            (Some(NOW + 3_600_000), None, None, None)
        );

        let nightly = AlarmSilenceSpec {
            cron: Some("0 0 2 * * ?".into()),
            duration_secs: Some(1800),
            time_zone: Some("UTC".into()),
            ..AlarmSilenceSpec {
                job_id: Some(9),
                ..AlarmSilenceSpec::default()
            }
        }
        .validate("Europe/Berlin", NOW)
        .unwrap();
        let shown = nightly.shown(8, "bob", NOW, NOW);
        assert_eq!((shown.group_id, shown.job_id), (None, Some(9)));
        assert_eq!((shown.starts_at, shown.ends_at), (None, None));
        assert!(shown.next_start.is_some_and(|s| s > NOW && s - NOW <= 86_400_000));
    }

    #[test]
    fn refusals_name_the_field() {
        let in_an_hour = Some(NOW + 3_600_000);
        let refused = [
            (
                AlarmSilenceSpec {
                    job_id: Some(1),
                    ends_at: in_an_hour,
                    ..group(1)
                },
                "group_id",
            ),
            (
                AlarmSilenceSpec {
                    ends_at: in_an_hour,
                    ..AlarmSilenceSpec::default()
                },
                "group_id",
            ),
            (
                AlarmSilenceSpec {
                    ends_at: in_an_hour,
                    ..group(0)
                },
                "group_id",
            ),
            (group(1), "ends_at"),
            (
                AlarmSilenceSpec {
                    starts_at: Some(NOW + 10),
                    ends_at: Some(NOW + 5),
                    ..group(1)
                },
                "ends_at",
            ),
            (
                AlarmSilenceSpec {
                    ends_at: Some(NOW + 367 * 86_400_000),
                    ..group(1)
                },
                "ends_at",
            ),
            (
                AlarmSilenceSpec {
                    starts_at: Some(NOW - 7_200_000),
                    ends_at: Some(NOW - 3_600_000),
                    ..group(1)
                },
                "ends_at",
            ),
            (
                AlarmSilenceSpec {
                    ends_at: in_an_hour,
                    duration_secs: Some(60),
                    ..group(1)
                },
                "duration_secs",
            ),
            (
                AlarmSilenceSpec {
                    cron: Some("0 0 2 * * ?".into()),
                    ..group(1)
                },
                "duration_secs",
            ),
            (
                AlarmSilenceSpec {
                    cron: Some("0 0 2 * * ?".into()),
                    duration_secs: Some(MAX_DURATION_SECS + 1),
                    ..group(1)
                },
                "duration_secs",
            ),
            (
                AlarmSilenceSpec {
                    cron: Some("0 0 2 * * ?".into()),
                    duration_secs: Some(60),
                    ends_at: in_an_hour,
                    ..group(1)
                },
                "ends_at",
            ),
            (
                AlarmSilenceSpec {
                    cron: Some("0 0 25 * * ?".into()),
                    duration_secs: Some(60),
                    ..group(1)
                },
                "cron",
            ),
            (
                AlarmSilenceSpec {
                    cron: Some("0 0 2 * * ? 2020".into()),
                    duration_secs: Some(60),
                    ..group(1)
                },
                "cron",
            ),
            (
                AlarmSilenceSpec {
                    ends_at: in_an_hour,
                    time_zone: Some("Mars/Olympus".into()),
                    ..group(1)
                },
                "time_zone",
            ),
            (
                AlarmSilenceSpec {
                    ends_at: in_an_hour,
                    name: Some("n".repeat(65)),
                    ..group(1)
                },
                "name",
            ),
            (
                AlarmSilenceSpec {
                    ends_at: in_an_hour,
                    reason: Some("r".repeat(501)),
                    ..group(1)
                },
                "reason",
            ),
        ];
        for (spec, field) in refused {
            let got = spec.validate("UTC", NOW);
            assert_eq!(got.as_ref().map_err(|e| e.field.as_str()), Err(field), "{spec:?}");
        }
    }
}
