//! ROUND: round robin per job. As in XXL-JOB, each job's counter starts at a random value
//! (so many admins or restarts do not all begin with the first executor) and counters are
//! forgotten once a day.

use super::daily::DailyJobs;
use rand::Rng;

/// Per-job counters (`None` until the job's first pick).
#[derive(Debug, Default)]
pub struct Round {
    counters: DailyJobs<Option<u64>>,
}

impl Round {
    /// Picks the next address for `job_id`.
    pub fn pick<'a>(&self, job_id: i64, addresses: &'a [String], now_ms: i64) -> Option<&'a String> {
        if addresses.is_empty() {
            return None;
        }
        let chosen = self.counters.with(job_id, now_ms, |counter| {
            let c = counter.get_or_insert_with(|| rand::rng().random_range(0..100));
            if *c > 1_000_000 {
                *c = rand::rng().random_range(0..100);
            }
            let chosen = (*c as usize) % addresses.len();
            *c += 1;
            chosen
        });
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
