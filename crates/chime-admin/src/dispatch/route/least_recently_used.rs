//! LEAST_RECENTLY_USED: the address this job was sent to longest ago (never used first);
//! forgotten once a day.

use super::daily::DailyJobs;
use std::collections::HashMap;

/// One job's use order.
#[derive(Debug, Default)]
struct Uses {
    /// Last use of each address, by `clock`.
    last: HashMap<String, u64>,
    /// A logical clock, ticking at each pick.
    clock: u64,
}

/// Per-job last-use order.
#[derive(Debug, Default)]
pub struct LeastRecentlyUsed {
    uses: DailyJobs<Uses>,
}

impl LeastRecentlyUsed {
    /// Picks the least recently used address for `job_id` and marks it used.
    pub fn pick<'a>(&self, job_id: i64, addresses: &'a [String], now_ms: i64) -> Option<&'a String> {
        if addresses.is_empty() {
            return None;
        }
        self.uses.with(job_id, now_ms, |uses| {
            uses.last.retain(|a, _| addresses.contains(a));
            let chosen = addresses
                .iter()
                .min_by_key(|a| uses.last.get(*a).copied().unwrap_or(0))?;
            uses.clock += 1;
            uses.last.insert(chosen.clone(), uses.clock);
            Some(chosen)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_through_addresses() {
        let lru = LeastRecentlyUsed::default();
        let addrs: Vec<String> = vec!["a".into(), "b".into(), "c".into()];
        let picks: Vec<String> = (0..6).map(|_| lru.pick(1, &addrs, 0).unwrap().clone()).collect();
        assert_eq!(picks, ["a", "b", "c", "a", "b", "c"]);
    }
}
