//! The partitions this admin schedules, shared by the loops that change them (leases,
//! recovery), claim their fires (the claim loop) and send their runs (dispatch). A leaf: it
//! imports nothing of the scheduler, so dispatch can read it without importing the loops.

use std::collections::BTreeSet;
use std::sync::RwLock;
use std::time::Instant;
use tokio::sync::Notify;

/// The partitions this admin schedules — leased, and recovered since this process leased them
/// (see `schedule::lease::balance` and `schedule::recover`) — until when it may act for them,
/// and the claim loop's wake-up.
///
/// The deadline is this process's monotonic clock: the start of the last lease round that
/// renewed the leases, plus the lease time, less a margin. Past it the leases may have lapsed
/// in the database and another admin may be sending their runs, so this admin claims and sends
/// nothing for them — also when it was frozen (SIGSTOP, a pause) or cut off from the database,
/// and whatever its wall clock did meanwhile. The next round that renews them puts them
/// through recovery again before they are scheduled.
#[derive(Debug, Default)]
pub struct Partitions {
    state: RwLock<Scheduling>,
    claim_now: Notify,
}

#[derive(Debug, Default)]
struct Scheduling {
    /// Leased and recovered.
    scheduled: BTreeSet<i64>,
    /// Until when the leases hold; `None`: no deadline (the single admin of a SQLite database,
    /// whose leases no other admin takes).
    valid_until: Option<Instant>,
}

impl Scheduling {
    fn valid(&self) -> bool {
        self.valid_until.is_none_or(|until| Instant::now() < until)
    }
}

impl Partitions {
    /// Whether this admin schedules `partition` now.
    pub fn holds(&self, partition: i64) -> bool {
        let state = self.state.read().unwrap_or_else(|p| p.into_inner());
        state.valid() && state.scheduled.contains(&partition)
    }

    /// The partitions this admin schedules now (none once its leases may have lapsed).
    pub fn held(&self) -> Vec<i64> {
        let state = self.state.read().unwrap_or_else(|p| p.into_inner());
        if !state.valid() {
            return Vec::new();
        }
        state.scheduled.iter().copied().collect()
    }

    /// Adds recovered partitions to the scheduling set: the claim loop may claim them now.
    pub(crate) fn start_scheduling(&self, partitions: &[i64]) {
        self.state
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .scheduled
            .extend(partitions.iter().copied());
    }

    /// After a lease round: keeps scheduling only the partitions in `leased`, valid until
    /// `valid_until`. Returns those of `leased` not scheduled (not added here: they wait for
    /// recovery) and those no longer scheduled. When the previous deadline had passed, nothing
    /// is kept: every leased partition goes through recovery again.
    pub(crate) fn keep_leased(&self, leased: &BTreeSet<i64>, valid_until: Option<Instant>) -> (Vec<i64>, Vec<i64>) {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        let lapsed = !state.valid();
        let lost: Vec<i64> = if lapsed {
            std::mem::take(&mut state.scheduled).into_iter().collect()
        } else {
            let lost = state.scheduled.difference(leased).copied().collect();
            state.scheduled.retain(|p| leased.contains(p));
            lost
        };
        let acquired: Vec<i64> = leased.difference(&state.scheduled).copied().collect();
        state.valid_until = valid_until;
        (acquired, lost)
    }

    /// Stops scheduling `partition` (its lease is about to be given back): from here on this
    /// admin claims and sends nothing for it, before another admin can take it.
    pub(crate) fn stop_scheduling(&self, partition: i64) {
        self.state
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .scheduled
            .remove(&partition);
    }

    /// Stops scheduling everything at once (the leases are being given back).
    pub(crate) fn stop_all(&self) -> Vec<i64> {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut state.scheduled).into_iter().collect()
    }

    /// Wakes the claim loop (a job was started or rescheduled, partitions were taken over).
    pub fn wake_claims(&self) {
        self.claim_now.notify_one();
    }

    /// Waits for [`Partitions::wake_claims`].
    pub(crate) async fn claims_woken(&self) {
        self.claim_now.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn set(v: &[i64]) -> BTreeSet<i64> {
        v.iter().copied().collect()
    }

    #[test]
    fn leased_partitions_are_scheduled_after_recovery_and_until_the_deadline() {
        let parts = Partitions::default();
        let soon = Some(Instant::now() + Duration::from_secs(60));
        let (acquired, lost) = parts.keep_leased(&set(&[1, 2]), soon);
        assert_eq!((acquired, lost), (vec![1, 2], vec![]));
        assert!(!parts.holds(1), "not before recovery");
        parts.start_scheduling(&[1, 2]);
        assert!(parts.holds(1) && parts.holds(2));
        // Renewed with one partition fewer: that one is lost, nothing new to recover.
        let (acquired, lost) = parts.keep_leased(&set(&[1]), soon);
        assert_eq!((acquired, lost), (vec![], vec![2]));
        assert_eq!(parts.held(), vec![1]);
    }

    #[test]
    fn a_lapsed_deadline_stops_everything_and_renewal_recovers_again() {
        let parts = Partitions::default();
        let past = Some(Instant::now() - Duration::from_millis(1));
        parts.keep_leased(&set(&[3, 4]), Some(Instant::now() + Duration::from_secs(60)));
        parts.start_scheduling(&[3, 4]);
        // The leases were last renewed too long ago (frozen process, database out of reach).
        parts.keep_leased(&set(&[3, 4]), past);
        parts.start_scheduling(&[3, 4]);
        assert!(!parts.holds(3), "nothing is sent past the deadline");
        assert!(parts.held().is_empty(), "nothing is claimed past the deadline");
        // Renewed again: both partitions go through recovery before they are scheduled.
        let (acquired, lost) = parts.keep_leased(&set(&[3, 4]), Some(Instant::now() + Duration::from_secs(60)));
        assert_eq!((acquired, lost), (vec![3, 4], vec![3, 4]));
        assert!(!parts.holds(3));
    }

    #[test]
    fn without_a_deadline_the_partitions_never_lapse() {
        let parts = Partitions::default();
        parts.keep_leased(&set(&[0]), None);
        parts.start_scheduling(&[0]);
        assert!(parts.holds(0));
    }
}
