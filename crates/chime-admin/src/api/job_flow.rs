//! A job's place in flow control: its priority in the queue and the concurrency key it shares
//! a limit under ([`JobFlow`]), and the same as input ([`JobFlowPatch`]). Limits themselves
//! are named separately (`/v1/limits`); a job names the one it shares with `concurrency_key`.

use super::{is_plain_name, Invalid};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The lowest and highest priority a job may have.
pub const PRIORITY_RANGE: std::ops::RangeInclusive<i64> = -1000..=1000;

/// The longest concurrency key, in bytes.
pub const MAX_KEY_LEN: usize = 128;

/// A job's priority and concurrency key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobFlow {
    /// Its place in the queue of a full limit: higher first (−1000 to 1000, default 0); among
    /// equals the oldest first. A waiting run gains one point a minute, so none waits forever.
    pub priority: i64,
    /// The limit the job's runs share with every job of the same key (`warehouse-db`): at most
    /// as many run at once as the limit of that name allows (`/v1/limits`). Empty: none.
    #[schemars(length(max = 128))]
    pub concurrency_key: String,
}

/// Input of a job's priority and concurrency key: each left out (or `null`) keeps its value on
/// update and takes the default on create.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobFlowPatch {
    /// See [`JobFlow::priority`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -1000, max = 1000))]
    pub priority: Option<i64>,
    /// See [`JobFlow::concurrency_key`]; `""` removes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 128))]
    pub concurrency_key: Option<String>,
}

impl JobFlowPatch {
    /// The values `base` (the stored job on update, `None` on create) gets from this input.
    pub fn apply_to(&self, base: Option<&JobFlow>) -> Result<JobFlow, Invalid> {
        let mut flow = base.cloned().unwrap_or_default();
        if let Some(p) = self.priority {
            if !PRIORITY_RANGE.contains(&p) {
                return Err(Invalid::new("priority", "must be between -1000 and 1000"));
            }
            flow.priority = p;
        }
        if let Some(key) = &self.concurrency_key {
            if !key.is_empty() && !is_limit_key(key) {
                return Err(Invalid::new(
                    "concurrency_key",
                    "must be 1-128 of A-Z a-z 0-9 . _ - (the prefixes group: and executor: name other limits)",
                ));
            }
            flow.concurrency_key.clone_from(key);
        }
        Ok(flow)
    }

    /// Whether it sets nothing (a run's own flow: every run's but some workflow nodes').
    pub fn is_empty(&self) -> bool {
        self.priority.is_none() && self.concurrency_key.is_none()
    }

    /// The priority and concurrency key of a run that carries this over its job's `job`
    /// (a workflow node's run): what it gives, else the job's. Unchecked: a stored run's
    /// values were checked when its workflow was saved.
    pub fn over<'a>(&'a self, job: &'a JobFlow) -> (i64, &'a str) {
        (
            self.priority.unwrap_or(job.priority),
            self.concurrency_key.as_deref().unwrap_or(&job.concurrency_key),
        )
    }

    /// The input that gives `flow` from the defaults, naming only what differs from them
    /// (so a jobs document of a job without flow control does not mention it).
    pub fn of(flow: &JobFlow) -> JobFlowPatch {
        JobFlowPatch {
            priority: Some(flow.priority).filter(|p| *p != 0),
            concurrency_key: Some(flow.concurrency_key.clone()).filter(|k| !k.is_empty()),
        }
    }
}

/// Whether `key` may be a job's concurrency key: a plain name (no `:`, so it cannot be taken
/// for a group's or an executor's limit).
pub fn is_limit_key(key: &str) -> bool {
    is_plain_name(key, MAX_KEY_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_and_key_are_checked_and_kept() {
        let base = JobFlow {
            priority: 5,
            concurrency_key: "warehouse-db".into(),
        };
        let kept = JobFlowPatch::default().apply_to(Some(&base)).unwrap();
        assert_eq!(kept, base);
        let changed = JobFlowPatch {
            priority: Some(-3),
            concurrency_key: Some(String::new()),
        }
        .apply_to(Some(&base))
        .unwrap();
        assert_eq!((changed.priority, changed.concurrency_key.as_str()), (-3, ""));
        let too_high = JobFlowPatch {
            priority: Some(1001),
            ..Default::default()
        };
        assert_eq!(too_high.apply_to(None).unwrap_err().field, "priority");
        for bad in ["group:billing", "a b", &"k".repeat(129)] {
            let patch = JobFlowPatch {
                concurrency_key: Some(bad.to_owned()),
                ..Default::default()
            };
            assert_eq!(patch.apply_to(None).unwrap_err().field, "concurrency_key", "{bad}");
        }
    }
}
