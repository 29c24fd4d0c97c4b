//! LEAST_FREQUENTLY_USED: the address this job was sent to least often. New addresses start
//! at a small random count (as in XXL-JOB) so a fresh executor does not take every run at once;
//! counts are forgotten once a day.

use super::daily::DailyJobs;
use rand::Rng;
use std::collections::HashMap;

/// Per-job use counts: how often each address was picked.
#[derive(Debug, Default)]
pub struct LeastFrequentlyUsed {
    counts: DailyJobs<HashMap<String, u64>>,
}

impl LeastFrequentlyUsed {
    /// Picks the least used address for `job_id` and counts the use.
    pub fn pick<'a>(&self, job_id: i64, addresses: &'a [String], now_ms: i64) -> Option<&'a String> {
        if addresses.is_empty() {
            return None;
        }
        self.counts.with(job_id, now_ms, |counts| {
            counts.retain(|a, _| addresses.contains(a));
            for a in addresses {
                let c = counts
                    .entry(a.clone())
                    .or_insert_with(|| rand::rng().random_range(0..addresses.len() as u64));
                if *c > 1_000_000 {
                    *c = 0;
                }
            }
            let chosen = addresses.iter().min_by_key(|a| counts.get(*a).copied().unwrap_or(0))?;
            if let Some(c) = counts.get_mut(chosen) {
                *c += 1;
            }
            Some(chosen)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_evenly_over_time() {
        let lfu = LeastFrequentlyUsed::default();
        let addrs: Vec<String> = vec!["a".into(), "b".into()];
        let mut n = HashMap::new();
        for _ in 0..100 {
            *n.entry(lfu.pick(7, &addrs, 0).unwrap().clone()).or_insert(0i32) += 1;
        }
        assert!((n["a"] - n["b"]).abs() <= 2, "{n:?}");
    }
}
