//! The limits on running runs as this admin knows them, and the queue loop's wake-up: shared by
//! dispatch (which takes slots only for runs a limit applies to), the results writer (which
//! wakes the queue when runs end while limits exist) and the API (which changes limits).
//!
//! The database holds the limits and their slots; this copy only says which names are limited,
//! so that with no limit configured a send costs nothing more than reading an empty map. It is
//! read again from the database at every round of the queue (`schedule/queue.rs`), so a limit
//! set through another admin applies here within a round.

use crate::api::limits::{EXECUTOR_PREFIX, GROUP_PREFIX};
use std::collections::HashSet;
use std::sync::{Arc, RwLock};
use tokio::sync::Notify;

/// The names of the limits, and the queue's wake-up.
#[derive(Debug, Default)]
pub struct FlowLimits {
    limits: RwLock<Arc<HashSet<String>>>,
    wake: Notify,
}

impl FlowLimits {
    /// Replaces the known limits by their names.
    pub fn set(&self, names: impl IntoIterator<Item = String>) {
        *self.limits.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(names.into_iter().collect());
    }

    /// Whether no limit is known.
    pub fn is_empty(&self) -> bool {
        self.limits.read().unwrap_or_else(|p| p.into_inner()).is_empty()
    }

    /// The names of the limits that apply to a run of a job with concurrency key `key` (empty:
    /// none), of group `app_name`, sent to `address` (`None`: not known, a broadcast): of the
    /// job's key, the group's and the executor's, those that are limited.
    pub fn names_for(&self, key: &str, app_name: &str, address: Option<&str>) -> Vec<String> {
        let limits = self.limits.read().unwrap_or_else(|p| p.into_inner()).clone();
        if limits.is_empty() {
            return Vec::new();
        }
        let mut names = Vec::new();
        if !key.is_empty() && limits.contains(key) {
            names.push(key.to_owned());
        }
        let group = format!("{GROUP_PREFIX}{app_name}");
        if limits.contains(&group) {
            names.push(group);
        }
        if let Some(address) = address {
            let executor = format!("{EXECUTOR_PREFIX}{address}");
            if limits.contains(&executor) {
                names.push(executor);
            }
        }
        names
    }

    /// Wakes the queue's loop: slots may have freed, or a run was sent on by an operator.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Wakes the queue's loop only if limits exist: what a run's end calls.
    pub fn runs_ended(&self) {
        if !self.is_empty() {
            self.wake();
        }
    }

    /// Resolves at the next [`FlowLimits::wake`] (or at once, if one came since the last).
    pub async fn woken(&self) {
        self.wake.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_limited_names_apply() {
        let flow = FlowLimits::default();
        assert!(flow.names_for("db", "billing", Some("http://e:1")).is_empty());
        flow.set(["db", "group:billing", "executor:http://e:1"].map(str::to_owned));
        assert_eq!(
            flow.names_for("db", "billing", Some("http://e:1")),
            ["db", "group:billing", "executor:http://e:1"]
        );
        assert_eq!(flow.names_for("", "other", Some("http://e:2")), Vec::<String>::new());
        assert_eq!(flow.names_for("other-key", "billing", None), ["group:billing"]);
    }
}
