//! Flow control on the wire: limits on running runs ([`Limit`], [`LimitSpec`]) and the runs
//! waiting in the queue for a slot ([`QueuedRunEntry`]).

use super::job_flow::is_limit_key;
use super::{is_plain_name, Invalid};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The prefix of a group's limit: `group:<app_name>` limits every run of that group.
pub const GROUP_PREFIX: &str = "group:";

/// The prefix of an executor's limit: `executor:<address>` limits every run sent there.
pub const EXECUTOR_PREFIX: &str = "executor:";

/// The largest maximum a limit may have.
pub const MAX_RUNNING: i64 = 1_000_000;

/// A limit on running runs, with what it holds now.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
pub struct Limit {
    /// Its name: a jobs' concurrency key (`warehouse-db`), `group:<app_name>` (every run of
    /// that group) or `executor:<address>` (every run sent to that executor).
    pub name: String,
    /// How many runs may run at once under it.
    pub max_running: i64,
    /// How many do now.
    pub running: i64,
    /// How many wait in the queue on it.
    pub queued: i64,
    /// Last change, epoch ms.
    pub updated_at: i64,
}

/// The body that sets a limit (`PUT /v1/limits/{name}`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitSpec {
    /// How many runs may run at once under it (1 to 1,000,000).
    #[schemars(range(min = 1, max = 1000000))]
    pub max_running: i64,
}

impl LimitSpec {
    /// The maximum, checked.
    pub fn validate(&self) -> Result<i64, Invalid> {
        if (1..=MAX_RUNNING).contains(&self.max_running) {
            Ok(self.max_running)
        } else {
            Err(Invalid::new("max_running", "must be between 1 and 1000000"))
        }
    }
}

/// Checks a limit's name: a concurrency key, `group:` and an app name, or `executor:` and an
/// executor's address (`http://host:port`, `https://…`, `link://…`).
pub fn validate_limit_name(name: &str) -> Result<(), Invalid> {
    let ok = if let Some(app) = name.strip_prefix(GROUP_PREFIX) {
        is_plain_name(app, 64)
    } else if let Some(address) = name.strip_prefix(EXECUTOR_PREFIX) {
        address.len() <= 190
            && ["http://", "https://", "link://"]
                .iter()
                .any(|s| address.starts_with(s))
            && !address.ends_with('/')
            && address.bytes().all(|b| b.is_ascii_graphic())
    } else {
        is_limit_key(name)
    };
    if ok {
        Ok(())
    } else {
        Err(Invalid::new(
            "name",
            "must be a concurrency key (1-128 of A-Z a-z 0-9 . _ -), group:<app_name> or \
             executor:<address> (http://host:port, no trailing slash)",
        ))
    }
}

/// A run waiting in the queue for a slot.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
pub struct QueuedRunEntry {
    /// The run.
    pub run_id: i64,
    /// Its job.
    pub job_id: i64,
    /// Its job's group.
    pub group_id: i64,
    /// Its job's description.
    pub description: String,
    /// The limit it found full.
    pub waits_on: String,
    /// Its job's priority when it was queued.
    pub priority: i64,
    /// When it was queued, epoch ms.
    pub queued_at: i64,
    /// How long it has waited, ms.
    pub waited_ms: i64,
    /// Its place in the queue, from 1 (among the runs listed).
    pub position: i64,
    /// An operator sent it on regardless of its limits; it goes at the queue's next round.
    pub skip_queue: bool,
    /// Taken out of the queue and being sent.
    pub leaving: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_names_take_three_forms() {
        for good in [
            "warehouse-db",
            "group:billing",
            "executor:http://10.0.0.5:9999",
            "executor:link://abc",
        ] {
            assert!(validate_limit_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "group:",
            "group:a b",
            "executor:10.0.0.5:9999",
            "executor:http://h/",
            "a:b",
            "x y",
        ] {
            assert_eq!(validate_limit_name(bad).unwrap_err().field, "name", "{bad}");
        }
        assert!(LimitSpec { max_running: 0 }.validate().is_err());
        assert_eq!(LimitSpec { max_running: 5 }.validate(), Ok(5));
    }
}
