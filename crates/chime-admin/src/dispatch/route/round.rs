//! ROUND: round robin per job. As in XXL-JOB, each job's counter starts at a random value
//! (so many admins or restarts do not all begin with the first executor) and counters are
//! forgotten once a day.

use rand::Rng;
use std::collections::HashMap;
use std::sync::Mutex;

/// Per-job counters.
#[derive(Debug, Default)]
pub struct Round {
    state: Mutex<(HashMap<i64, u64>, i64)>,
}

const DAY_MS: i64 = 86_400_000;

impl Round {
    /// Picks the next address for `job_id`.
    pub fn pick<'a>(&self, job_id: i64, addresses: &'a [String], now_ms: i64) -> Option<&'a String> {
        if addresses.is_empty() {
            return None;
        }
        let mut guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (counters, reset_at) = &mut *guard;
        if now_ms >= *reset_at {
            counters.clear();
            *reset_at = now_ms + DAY_MS;
        }
        let c = counters
            .entry(job_id)
            .or_insert_with(|| rand::rng().random_range(0..100));
        if *c > 1_000_000 {
            *c = rand::rng().random_range(0..100);
        }
        let chosen = (*c as usize) % addresses.len();
        *c += 1;
        addresses.get(chosen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visits_every_address_in_turn() {
        let r = Round::default();
        let addrs: Vec<String> = vec!["a".into(), "b".into(), "c".into()];
        let picks: Vec<&String> = (0..6).map(|_| r.pick(1, &addrs, 0).unwrap()).collect();
        assert_eq!(picks[0], picks[3]);
        assert_ne!(picks[0], picks[1]);
        assert_ne!(picks[1], picks[2]);
    }
}
