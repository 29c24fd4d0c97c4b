//! A token bucket: at most `capacity` calls at once, refilled evenly over a period. The XXL-JOB
//! 3.5 job API (`/api/addJob`, …) is limited by one per admin, as XXL-JOB limits it (100 calls
//! per 30 s), so a tool looping on start-up cannot turn the admin into a job-writing machine.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A token bucket whose time is passed in, so it is tested without a clock.
#[derive(Debug)]
pub struct TokenBucket {
    capacity: f64,
    per_second: f64,
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    /// A full bucket of `capacity` tokens, refilled by `capacity` every `period`.
    pub fn new(capacity: u32, period: Duration, now: Instant) -> TokenBucket {
        let capacity = f64::from(capacity.max(1));
        TokenBucket {
            capacity,
            per_second: capacity / period.as_secs_f64().max(0.001),
            state: Mutex::new((capacity, now)),
        }
    }

    /// Takes one token at `now`; false when none is left (the call is refused).
    pub fn try_take(&self, now: Instant) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (tokens, at) = *state;
        let elapsed = now.saturating_duration_since(at).as_secs_f64();
        let tokens = (tokens + elapsed * self.per_second).min(self.capacity);
        // `at` only moves forward: a caller that read the clock earlier does not rewind it.
        let at = at.max(now);
        if tokens >= 1.0 {
            *state = (tokens - 1.0, at);
            true
        } else {
            *state = (tokens, at);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_bucket_then_a_refusal_then_a_refill() {
        let t0 = Instant::now();
        let bucket = TokenBucket::new(100, Duration::from_secs(30), t0);
        for i in 0..100 {
            assert!(bucket.try_take(t0), "call {i} of the first 100");
        }
        assert!(!bucket.try_take(t0), "the 101st call in the same instant");
        // 100 per 30 s: one token every 0.3 s.
        assert!(!bucket.try_take(t0 + Duration::from_millis(200)));
        assert!(bucket.try_take(t0 + Duration::from_millis(400)));
        assert!(!bucket.try_take(t0 + Duration::from_millis(400)));
        // Never more than the capacity, however long it rested.
        let later = t0 + Duration::from_secs(3600);
        for _ in 0..100 {
            assert!(bucket.try_take(later));
        }
        assert!(!bucket.try_take(later));
    }

    #[test]
    fn an_earlier_instant_does_not_refill() {
        let t0 = Instant::now() + Duration::from_secs(10);
        let bucket = TokenBucket::new(1, Duration::from_secs(30), t0);
        assert!(bucket.try_take(t0));
        assert!(!bucket.try_take(t0 - Duration::from_secs(5)));
        assert!(!bucket.try_take(t0));
    }
}
