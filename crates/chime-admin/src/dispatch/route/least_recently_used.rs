//! LEAST_RECENTLY_USED: the address this job was sent to longest ago (never used first);
//! forgotten once a day.

use std::collections::HashMap;
use std::sync::Mutex;

/// Last use (a logical clock) per address, per job.
type LastUse = HashMap<i64, HashMap<String, u64>>;

/// Per-job last-use order.
#[derive(Debug, Default)]
pub struct LeastRecentlyUsed {
    state: Mutex<(LastUse, u64, i64)>,
}

impl LeastRecentlyUsed {
    /// Picks the least recently used address for `job_id` and marks it used.
    pub fn pick<'a>(&self, job_id: i64, addresses: &'a [String], now_ms: i64) -> Option<&'a String> {
        if addresses.is_empty() {
            return None;
        }
        let mut guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (jobs, clock, reset_at) = &mut *guard;
        if now_ms >= *reset_at {
            jobs.clear();
            *reset_at = now_ms + 86_400_000;
        }
        let used = jobs.entry(job_id).or_default();
        used.retain(|a, _| addresses.contains(a));
        let chosen = addresses.iter().min_by_key(|a| used.get(*a).copied().unwrap_or(0))?;
        *clock += 1;
        used.insert(chosen.clone(), *clock);
        Some(chosen)
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
