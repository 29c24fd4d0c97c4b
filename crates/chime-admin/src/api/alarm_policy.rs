//! When a job's runs raise an alarm: its `alarm_policy`, a short list of terms stored and sent
//! as text beside the job's other alarm fields (`after_failures=3, on_recovery`), so it is
//! declared once with them ([`super::job_info`]) and reaches the jobs document, the schema, the
//! CLI and the console as they do. [`AlarmPolicy::parse`] is the one reader of that text.

use super::Invalid;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// Most consecutive failures a policy may wait for.
const MAX_AFTER_FAILURES: u32 = 1000;
/// Longest time a policy may allow a run to wait or take.
const MAX_WAIT: Duration = Duration::from_secs(7 * 24 * 3600);

/// A job's alarm policy. The default (empty text) alarms every run that fails for good, as
/// XXL-JOB does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlarmPolicy {
    /// Alarm at the Nth failure in a row, and at every Nth after (2N, 3N, …), so a long outage
    /// reminds without flooding; 1 alarms every failure.
    pub after_failures: u32,
    /// Say so when the job succeeds after an alarmed failure.
    pub on_recovery: bool,
    /// Alarm a run that has not started this long after its scheduled time, or started later
    /// than that.
    pub late_after: Option<Duration>,
    /// Alarm a run still running this long after it started (before its timeout, if any).
    pub longer_than: Option<Duration>,
    /// At most one failure alarm of the job in this time: the failures in between are
    /// recorded on their runs as rate-limited, not sent.
    pub at_most_every: Option<Duration>,
}

impl Default for AlarmPolicy {
    fn default() -> AlarmPolicy {
        AlarmPolicy {
            after_failures: 1,
            on_recovery: false,
            late_after: None,
            longer_than: None,
            at_most_every: None,
        }
    }
}

impl AlarmPolicy {
    /// Reads `after_failures=N` and `on_recovery`, separated by commas (white space ignored);
    /// an empty text is the default.
    pub fn parse(text: &str) -> Result<AlarmPolicy, Invalid> {
        let refuse = |why: String| Invalid::new("alarm_policy", why);
        let mut policy = AlarmPolicy::default();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            match term.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
                Some(("after_failures", n)) => {
                    policy.after_failures = n
                        .parse::<u32>()
                        .ok()
                        .filter(|n| (1..=MAX_AFTER_FAILURES).contains(n))
                        .ok_or_else(|| {
                            refuse(format!(
                                "after_failures must be a whole number from 1 to {MAX_AFTER_FAILURES}, not '{n}'"
                            ))
                        })?;
                }
                Some(("late_after", d)) => policy.late_after = Some(wait(d).map_err(refuse)?),
                Some(("longer_than", d)) => policy.longer_than = Some(wait(d).map_err(refuse)?),
                Some(("at_most_every", d)) => policy.at_most_every = Some(wait(d).map_err(refuse)?),
                None if term == "on_recovery" => policy.on_recovery = true,
                _ => {
                    return Err(refuse(format!(
                        "'{term}' is not a policy term; known: after_failures=N, on_recovery, late_after=DURATION, longer_than=DURATION, at_most_every=DURATION"
                    )))
                }
            }
        }
        Ok(policy)
    }

    /// Whether the `streak`th failure in a row alarms.
    pub fn alarms_at(&self, streak: u32) -> bool {
        streak > 0 && streak % self.after_failures.max(1) == 0
    }
}

/// The language an alarm message is written in (a job's `alarm_language`, the admin's
/// `--alarm-language`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum AlarmLanguage {
    /// English.
    #[default]
    En,
    /// Simplified Chinese.
    Zh,
}

impl AlarmLanguage {
    /// Reads a job's `alarm_language`: `None` when empty (the admin's language applies).
    pub fn parse(text: &str) -> Result<Option<AlarmLanguage>, Invalid> {
        match text.trim() {
            "" => Ok(None),
            "en" => Ok(Some(AlarmLanguage::En)),
            "zh" => Ok(Some(AlarmLanguage::Zh)),
            other => Err(Invalid::new(
                "alarm_language",
                format!("'{other}' is not an alarm language (expected en, zh or empty)"),
            )),
        }
    }

    /// As stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            AlarmLanguage::En => "en",
            AlarmLanguage::Zh => "zh",
        }
    }
}

/// A duration term's value (`90s`, `10m`, `1h 30m`): 1 s to 7 days, whole seconds.
fn wait(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text)
        .map_err(|e| format!("'{text}' is not a duration (use e.g. 90s, 10m, 2h): {e}"))?;
    let d = Duration::from_secs(d.as_secs());
    if d < Duration::from_secs(1) || d > MAX_WAIT {
        return Err(format!("'{text}' must be from 1s to 7 days"));
    }
    Ok(d)
}

/// The policy as stored: its terms in a fixed order, empty for the default.
impl fmt::Display for AlarmPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut terms = Vec::new();
        if self.after_failures != 1 {
            terms.push(format!("after_failures={}", self.after_failures));
        }
        if self.on_recovery {
            terms.push("on_recovery".to_owned());
        }
        let timed = [
            ("late_after", self.late_after),
            ("longer_than", self.longer_than),
            ("at_most_every", self.at_most_every),
        ];
        for (name, d) in timed {
            if let Some(d) = d {
                terms.push(format!("{name}={}", humantime::format_duration(d)));
            }
        }
        f.write_str(&terms.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_are_read_and_written_back_in_one_order() {
        let p = AlarmPolicy::parse(" on_recovery , after_failures = 3 ").unwrap();
        let expected = AlarmPolicy {
            after_failures: 3,
            on_recovery: true,
            ..AlarmPolicy::default()
        };
        assert_eq!(p, expected);
        assert_eq!(p.to_string(), "after_failures=3,on_recovery");
        let timed = AlarmPolicy::parse("at_most_every=10m, longer_than=90s, late_after=1h 30m").unwrap();
        assert_eq!(timed.longer_than, Some(Duration::from_secs(90)));
        assert_eq!(timed.at_most_every, Some(Duration::from_secs(600)));
        assert_eq!(
            timed.to_string(),
            "late_after=1h 30m,longer_than=1m 30s,at_most_every=10m"
        );
        assert_eq!(AlarmPolicy::parse(&timed.to_string()).unwrap(), timed);
        assert_eq!(AlarmPolicy::parse("").unwrap(), AlarmPolicy::default());
        assert_eq!(AlarmPolicy::default().to_string(), "");
        let refused = [
            "after_failures=0",
            "after_failures=x",
            "sometimes",
            "after_failures=1001",
            "late_after=0s",
            "longer_than=8d",
            "longer_than=soon",
            "at_most_every=0s",
        ];
        for bad in refused {
            assert_eq!(AlarmPolicy::parse(bad).unwrap_err().field, "alarm_policy", "{bad}");
        }
    }

    #[test]
    fn alarm_languages_are_en_zh_or_empty() {
        assert_eq!(AlarmLanguage::parse(" zh ").unwrap(), Some(AlarmLanguage::Zh));
        assert_eq!(AlarmLanguage::parse("en").unwrap(), Some(AlarmLanguage::En));
        assert_eq!(AlarmLanguage::parse("").unwrap(), None);
        assert_eq!(AlarmLanguage::parse("fr").unwrap_err().field, "alarm_language");
    }

    #[test]
    fn every_nth_failure_in_a_row_alarms() {
        let p = AlarmPolicy {
            after_failures: 3,
            ..AlarmPolicy::default()
        };
        let alarmed: Vec<u32> = (0..=9).filter(|s| p.alarms_at(*s)).collect();
        assert_eq!(alarmed, vec![3, 6, 9]);
        assert!(AlarmPolicy::default().alarms_at(1));
    }
}
