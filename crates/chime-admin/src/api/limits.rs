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

/// The longest queue timeout, in seconds (a week).
pub const MAX_QUEUE_TIMEOUT_SECS: i64 = 7 * 24 * 3600;

/// What a limit allows, as stored: each part 0 when it does not apply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitRule {
    /// How many runs may hold a slot at once (0: any number).
    pub max_running: i64,
    /// How many runs may start in each window of `rate_period_ms` (0: no rate).
    pub rate_max: i64,
    /// The rate's window: 1,000 (a second) or 60,000 (a minute).
    pub rate_period_ms: i64,
    /// How long a run may wait in the queue on this limit before it ends failed (0: no end).
    pub queue_timeout_ms: i64,
}

impl LimitRule {
    /// The rate's window by name: `minute` or `second`.
    pub fn per(&self) -> &'static str {
        if self.rate_period_ms >= 60_000 {
            "minute"
        } else {
            "second"
        }
    }
}

/// A limit on running runs, with what it holds now.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
pub struct Limit {
    /// Its name: a jobs' concurrency key (`warehouse-db`), `group:<app_name>` (every run of
    /// that group) or `executor:<address>` (every run sent to that executor).
    pub name: String,
    /// How many runs may run at once under it (`null`: any number).
    pub max_running: Option<i64>,
    /// How many runs may start under it per `per` (`null`: no rate).
    pub rate: Option<i64>,
    /// The rate's window: `second` or `minute` (`null` without a rate).
    pub per: Option<String>,
    /// How long a run may wait in the queue on it before it ends failed, in seconds (`null`:
    /// as long as it takes).
    pub queue_timeout_secs: Option<i64>,
    /// How many runs hold a slot now.
    pub running: i64,
    /// How many wait in the queue on it.
    pub queued: i64,
    /// Last change, epoch ms.
    pub updated_at: i64,
}

impl Limit {
    /// The answer for limit `name` with `rule`, holding `running` and waited on by `queued`.
    pub fn shown(name: String, rule: LimitRule, running: i64, queued: i64, updated_at: i64) -> Limit {
        let positive = |v: i64| Some(v).filter(|v| *v > 0);
        Limit {
            name,
            max_running: positive(rule.max_running),
            rate: positive(rule.rate_max),
            per: positive(rule.rate_max).map(|_| rule.per().to_owned()),
            queue_timeout_secs: positive(rule.queue_timeout_ms / 1000),
            running,
            queued,
            updated_at,
        }
    }
}

/// The body that sets a limit (`PUT /v1/limits/{name}`): a maximum of running runs, a rate, or
/// both; what is left out does not apply.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct LimitSpec {
    /// How many runs may run at once under it (1 to 1,000,000).
    #[schemars(range(min = 1, max = 1000000))]
    pub max_running: Option<i64>,
    /// How many runs may start under it per `per` (1 to 1,000,000).
    #[schemars(range(min = 1, max = 1000000))]
    pub rate: Option<i64>,
    /// The rate's window: `second` (the default) or `minute`.
    pub per: Option<String>,
    /// End a run that waited this long in the queue on it, failed (1 s to a week).
    #[schemars(range(min = 1, max = 604800))]
    pub queue_timeout_secs: Option<i64>,
}

impl LimitSpec {
    /// The rule, checked.
    pub fn validate(&self) -> Result<LimitRule, Invalid> {
        let in_range = |field: &str, v: Option<i64>, max: i64| match v {
            None => Ok(0),
            Some(v) if (1..=max).contains(&v) => Ok(v),
            Some(_) => Err(Invalid::new(field, format!("must be between 1 and {max}"))),
        };
        let max_running = in_range("max_running", self.max_running, MAX_RUNNING)?;
        let rate_max = in_range("rate", self.rate, MAX_RUNNING)?;
        let queue_timeout_secs = in_range("queue_timeout_secs", self.queue_timeout_secs, MAX_QUEUE_TIMEOUT_SECS)?;
        let rate_period_ms = match self.per.as_deref() {
            None | Some("second") => 1000,
            Some("minute") => 60_000,
            Some(other) => return Err(Invalid::new("per", format!("'{other}' is not second or minute"))),
        };
        if self.per.is_some() && rate_max == 0 {
            return Err(Invalid::new("per", "needs a rate"));
        }
        if max_running == 0 && rate_max == 0 {
            return Err(Invalid::new(
                "max_running",
                "a limit needs max_running, a rate, or both",
            ));
        }
        Ok(LimitRule {
            max_running,
            rate_max,
            rate_period_ms: if rate_max > 0 { rate_period_ms } else { 0 },
            queue_timeout_ms: queue_timeout_secs * 1000,
        })
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
    /// Its priority when it was queued: its job's, or its workflow node's own.
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
        let spec = |max: Option<i64>, rate: Option<i64>, per: Option<&str>| LimitSpec {
            max_running: max,
            rate,
            per: per.map(str::to_owned),
            queue_timeout_secs: None,
        };
        assert_eq!(spec(Some(0), None, None).validate().unwrap_err().field, "max_running");
        assert_eq!(spec(None, None, None).validate().unwrap_err().field, "max_running");
        assert_eq!(spec(None, None, Some("minute")).validate().unwrap_err().field, "per");
        assert_eq!(spec(None, Some(5), Some("hour")).validate().unwrap_err().field, "per");
        assert_eq!(spec(Some(5), None, None).validate().map(|r| r.max_running), Ok(5));
        let rate = spec(None, Some(10), Some("minute")).validate().unwrap();
        assert_eq!((rate.max_running, rate.rate_max, rate.rate_period_ms), (0, 10, 60_000));
        let shown = Limit::shown("k".into(), rate, 0, 0, 0);
        assert_eq!(
            (shown.max_running, shown.rate, shown.per.as_deref()),
            (None, Some(10), Some("minute"))
        );
    }
}
