//! When a job's runs raise an alarm: its `alarm_policy`, a short list of terms stored and sent
//! as text beside the job's other alarm fields (`after_failures=3, on_recovery`), so it is
//! declared once with them ([`super::job_info`]) and reaches the jobs document, the schema, the
//! CLI and the console as they do. [`AlarmPolicy::parse`] is the one reader of that text.

use super::Invalid;
use std::fmt;

/// Most consecutive failures a policy may wait for.
const MAX_AFTER_FAILURES: u32 = 1000;

/// A job's alarm policy. The default (empty text) alarms every run that fails for good, as
/// XXL-JOB does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlarmPolicy {
    /// Alarm at the Nth failure in a row, and at every Nth after (2N, 3N, …), so a long outage
    /// reminds without flooding; 1 alarms every failure.
    pub after_failures: u32,
    /// Say so when the job succeeds after an alarmed failure.
    pub on_recovery: bool,
}

impl Default for AlarmPolicy {
    fn default() -> AlarmPolicy {
        AlarmPolicy {
            after_failures: 1,
            on_recovery: false,
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
                None if term == "on_recovery" => policy.on_recovery = true,
                _ => {
                    return Err(refuse(format!(
                        "'{term}' is not a policy term; known: after_failures=N, on_recovery"
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
        f.write_str(&terms.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_are_read_and_written_back_in_one_order() {
        let p = AlarmPolicy::parse(" on_recovery , after_failures = 3 ").unwrap();
        assert_eq!(
            p,
            AlarmPolicy {
                after_failures: 3,
                on_recovery: true
            }
        );
        assert_eq!(p.to_string(), "after_failures=3,on_recovery");
        assert_eq!(AlarmPolicy::parse("").unwrap(), AlarmPolicy::default());
        assert_eq!(AlarmPolicy::default().to_string(), "");
        for bad in [
            "after_failures=0",
            "after_failures=x",
            "sometimes",
            "after_failures=1001",
        ] {
            assert_eq!(AlarmPolicy::parse(bad).unwrap_err().field, "alarm_policy", "{bad}");
        }
    }

    #[test]
    fn every_nth_failure_in_a_row_alarms() {
        let p = AlarmPolicy {
            after_failures: 3,
            on_recovery: false,
        };
        let alarmed: Vec<u32> = (0..=9).filter(|s| p.alarms_at(*s)).collect();
        assert_eq!(alarmed, vec![3, 6, 9]);
        assert!(AlarmPolicy::default().alarms_at(1));
    }
}
