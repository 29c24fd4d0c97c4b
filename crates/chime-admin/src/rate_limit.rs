//! Token buckets: at most `capacity` calls at once, refilled evenly over a period, one bucket
//! per key. The XXL-JOB 3.5 job API (`/api/addJob`, …) is limited per executor group as XXL-JOB
//! limits it (100 calls per 30 s), so a tool looping on start-up cannot turn the admin into a
//! job-writing machine — nor, with its own group's token, use up the calls of every other group.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One bucket's state: its tokens as of an instant.
#[derive(Debug, Clone, Copy)]
struct Level {
    tokens: f64,
    at: Instant,
}

/// Token buckets by key, whose time is passed in, so they are tested without a clock. At most
/// `max_keys` buckets are kept: a full bucket is the same as none, so full ones are the first
/// to go, and then the fullest, so a flood of keys cannot grow memory without bound.
#[derive(Debug)]
pub struct KeyedBuckets<K> {
    capacity: f64,
    per_second: f64,
    max_keys: usize,
    levels: Mutex<HashMap<K, Level>>,
}

impl<K: Eq + Hash + Clone> KeyedBuckets<K> {
    /// Buckets of `capacity` tokens, each refilled by `capacity` every `period`, for at most
    /// `max_keys` keys at once.
    pub fn new(capacity: u32, period: Duration, max_keys: usize) -> KeyedBuckets<K> {
        let capacity = f64::from(capacity.max(1));
        KeyedBuckets {
            capacity,
            per_second: capacity / period.as_secs_f64().max(0.001),
            max_keys: max_keys.max(1),
            levels: Mutex::new(HashMap::new()),
        }
    }

    /// The tokens of `level` at `now`, refilled since (never past the capacity).
    fn refilled(&self, level: Level, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(level.at).as_secs_f64();
        (level.tokens + elapsed * self.per_second).min(self.capacity)
    }

    /// Takes one of `key`'s tokens at `now`; false when it has none left (the call is refused).
    pub fn try_take(&self, key: &K, now: Instant) -> bool {
        let mut levels = self.levels.lock().unwrap_or_else(|p| p.into_inner());
        if !levels.contains_key(key) && levels.len() >= self.max_keys {
            self.make_room(&mut levels, now);
        }
        let level = levels.entry(key.clone()).or_insert(Level {
            tokens: self.capacity,
            at: now,
        });
        let tokens = self.refilled(*level, now);
        // `at` only moves forward: a caller that read the clock earlier does not rewind it.
        let at = level.at.max(now);
        let taken = tokens >= 1.0;
        *level = Level {
            tokens: if taken { tokens - 1.0 } else { tokens },
            at,
        };
        taken
    }

    /// Drops the buckets that have refilled (nothing is lost: a new one is full); when none
    /// has, the fullest one, which loses its key at most the few tokens it lacked.
    fn make_room(&self, levels: &mut HashMap<K, Level>, now: Instant) {
        levels.retain(|_, level| self.refilled(*level, now) < self.capacity);
        if levels.len() < self.max_keys {
            return;
        }
        let fullest = levels
            .iter()
            .max_by(|a, b| self.refilled(*a.1, now).total_cmp(&self.refilled(*b.1, now)))
            .map(|(k, _)| k.clone());
        if let Some(k) = fullest {
            levels.remove(&k);
        }
    }

    /// How many buckets are kept.
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.levels.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_bucket_then_a_refusal_then_a_refill() {
        let t0 = Instant::now();
        let buckets = KeyedBuckets::new(100, Duration::from_secs(30), 10);
        for i in 0..100 {
            assert!(buckets.try_take(&1, t0), "call {i} of the first 100");
        }
        assert!(!buckets.try_take(&1, t0), "the 101st call in the same instant");
        // 100 per 30 s: one token every 0.3 s.
        assert!(!buckets.try_take(&1, t0 + Duration::from_millis(200)));
        assert!(buckets.try_take(&1, t0 + Duration::from_millis(400)));
        assert!(!buckets.try_take(&1, t0 + Duration::from_millis(400)));
        // Never more than the capacity, however long it rested.
        let later = t0 + Duration::from_secs(3600);
        for _ in 0..100 {
            assert!(buckets.try_take(&1, later));
        }
        assert!(!buckets.try_take(&1, later));
    }

    #[test]
    fn an_earlier_instant_does_not_refill() {
        let t0 = Instant::now() + Duration::from_secs(10);
        let buckets = KeyedBuckets::new(1, Duration::from_secs(30), 10);
        assert!(buckets.try_take(&1, t0));
        assert!(!buckets.try_take(&1, t0 - Duration::from_secs(5)));
        assert!(!buckets.try_take(&1, t0));
    }

    #[test]
    fn each_key_has_its_own_bucket() {
        let t0 = Instant::now();
        let buckets = KeyedBuckets::new(3, Duration::from_secs(30), 10);
        for _ in 0..3 {
            assert!(buckets.try_take(&"a", t0));
        }
        assert!(!buckets.try_take(&"a", t0));
        assert!(buckets.try_take(&"b", t0), "a's calls are not b's");
    }

    #[test]
    fn a_flood_of_keys_keeps_a_bounded_number_of_buckets() {
        let t0 = Instant::now();
        let buckets = KeyedBuckets::new(2, Duration::from_secs(30), 100);
        // Key 0 is emptied first; the flood comes after.
        assert!(buckets.try_take(&0, t0));
        assert!(buckets.try_take(&0, t0));
        for k in 1..100_000 {
            assert!(buckets.try_take(&k, t0), "a new key has a full bucket");
            assert!(buckets.kept() <= 100);
        }
        // The emptied bucket was the emptiest: kept to the end, still empty.
        let k0 = buckets.try_take(&0, t0);
        assert!(!k0, "an emptied bucket is not refilled by a flood of other keys");
    }
}
