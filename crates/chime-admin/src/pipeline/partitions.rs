//! The partitions this admin schedules, shared by the loops that change them (leases,
//! recovery), claim their fires (the claim loop) and send their runs (dispatch). A leaf: it
//! imports nothing of the scheduler, so dispatch can read it without importing the loops.

use std::collections::{BTreeMap, BTreeSet};
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
///
/// The deadline keeps an admin that knows it may have lapsed from sending; the lease epoch of
/// each partition, which this admin puts on every run just before sending it
/// (`Store::mark_sending`), makes the database refuse a send that slipped past the deadline
/// (a pause between the check and the send).
#[derive(Debug, Default)]
pub struct Partitions {
    state: RwLock<Scheduling>,
    claim_now: Notify,
}

/// Partitions one lease round took over, to be recovered before they are scheduled
/// ([`Partitions::keep_leased`], [`Partitions::start_scheduling`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Takeover {
    /// Which takeover this is: a partition lost while it was being recovered and taken again
    /// belongs to a later one, and the earlier recovery may no longer schedule it.
    pub(crate) batch: u64,
    /// The partitions, in order.
    pub partitions: Vec<i64>,
}

impl Takeover {
    /// Whether the round took nothing over.
    pub fn is_empty(&self) -> bool {
        self.partitions.is_empty()
    }
}

#[derive(Debug, Default)]
struct Scheduling {
    /// Leased and recovered.
    scheduled: BTreeSet<i64>,
    /// Leased and being recovered: partition → the takeover it came with. A recovery runs
    /// beside the lease rounds, so that renewals go on however long it takes; these are not
    /// taken over again meanwhile.
    recovering: BTreeMap<i64, u64>,
    /// The number of the last takeover.
    last_batch: u64,
    /// The epoch of each lease held after the last round (the fencing token of its sends).
    epochs: BTreeMap<i64, i64>,
    /// Until when the leases hold; `None`: no deadline (the single admin of a SQLite database,
    /// whose leases no other admin takes).
    valid_until: Option<Instant>,
}

impl Scheduling {
    fn valid(&self) -> bool {
        self.valid_until.is_none_or(|until| Instant::now() < until)
    }

    /// Whether this admin may act for `partition` now: scheduled, and the deadline holds.
    fn schedules(&self, partition: i64) -> bool {
        self.valid() && self.scheduled.contains(&partition)
    }
}

impl Partitions {
    /// Whether this admin schedules `partition` now.
    pub fn holds(&self, partition: i64) -> bool {
        self.state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .schedules(partition)
    }

    /// The partitions this admin schedules now (none once its leases may have lapsed).
    pub fn held(&self) -> Vec<i64> {
        self.held_epochs().into_iter().map(|(p, _)| p).collect()
    }

    /// [`Partitions::held`], each with its lease epoch: a partition lost and taken again comes
    /// back in a new epoch, which tells whoever kept state of it that another admin may have
    /// acted for it in between.
    pub fn held_epochs(&self) -> Vec<(i64, i64)> {
        let state = self.state.read().unwrap_or_else(|p| p.into_inner());
        if !state.valid() {
            return Vec::new();
        }
        state
            .scheduled
            .iter()
            .map(|p| (*p, state.epochs.get(p).copied().unwrap_or(0)))
            .collect()
    }

    /// The lease epoch to mark a run of `partition` with before sending it, while this admin
    /// schedules the partition.
    pub fn token(&self, partition: i64) -> Option<i64> {
        let state = self.state.read().unwrap_or_else(|p| p.into_inner());
        if !state.schedules(partition) {
            return None;
        }
        state.epochs.get(&partition).copied()
    }

    /// Adds the recovered partitions of `takeover` to the scheduling set (the claim loop may
    /// claim them now), and returns what `pick` returns, called at the same moment: no send
    /// can let a run of these partitions go meanwhile ([`Partitions::let_go_unless_held`]).
    /// Recovery picks there the pending runs that are not in flight, so each run read is
    /// either still in flight — and its send, going on, finds the partition scheduled — or was
    /// let go before and is picked. Without this, a run let go between recovery's check and
    /// the partition being scheduled again would be left pending with nobody to send it.
    ///
    /// Returns `None`, scheduling nothing, when a partition of the takeover was lost or its
    /// lease lapsed while it was being recovered: what recovery read may be stale, and a later
    /// takeover recovers those partitions again.
    pub(crate) fn start_scheduling<T>(&self, takeover: &Takeover, pick: impl FnOnce() -> T) -> Option<T> {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        let current = takeover
            .partitions
            .iter()
            .all(|p| state.recovering.get(p) == Some(&takeover.batch));
        if !current {
            return None;
        }
        let picked = pick();
        for p in &takeover.partitions {
            state.recovering.remove(p);
            state.scheduled.insert(*p);
        }
        Some(picked)
    }

    /// Forgets `takeover` after its recovery failed: the next lease round takes its partitions
    /// over again, and they are recovered anew.
    pub(crate) fn give_up_recovery(&self, takeover: &Takeover) {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        state.recovering.retain(|_, batch| *batch != takeover.batch);
    }

    /// Calls `let_go` (a send giving up its run) if this admin does not schedule `partition`
    /// now, and says whether it did; never while recovery picks runs
    /// ([`Partitions::start_scheduling`]).
    pub fn let_go_unless_held(&self, partition: i64, let_go: impl FnOnce()) -> bool {
        let state = self.state.read().unwrap_or_else(|p| p.into_inner());
        if state.schedules(partition) {
            return false;
        }
        let_go();
        true
    }

    /// After a lease round: keeps scheduling only the partitions in `leased` (partition →
    /// lease epoch), valid until `valid_until`. Returns the takeover of those of `leased`
    /// neither scheduled nor being recovered (not added here: they wait for recovery), and
    /// those no longer scheduled. When the previous deadline had passed, nothing is kept:
    /// every leased partition goes through recovery again; so does one whose epoch changed (it
    /// was lost and taken again in between), and with it the rest of a takeover it was being
    /// recovered with.
    pub(crate) fn keep_leased(
        &self,
        leased: &BTreeMap<i64, i64>,
        valid_until: Option<Instant>,
    ) -> (Takeover, Vec<i64>) {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        let lapsed = !state.valid();
        let lost: Vec<i64> = if lapsed {
            state.recovering.clear();
            std::mem::take(&mut state.scheduled).into_iter().collect()
        } else {
            let Scheduling {
                scheduled,
                recovering,
                epochs,
                ..
            } = &mut *state;
            let kept = |p: &i64| leased.get(p).is_some_and(|e| epochs.get(p) == Some(e));
            let lost = scheduled.iter().filter(|p| !kept(p)).copied().collect();
            scheduled.retain(kept);
            let stale: BTreeSet<u64> = recovering
                .iter()
                .filter(|(p, _)| !kept(p))
                .map(|(_, batch)| *batch)
                .collect();
            recovering.retain(|_, batch| !stale.contains(batch));
            lost
        };
        let partitions: Vec<i64> = leased
            .keys()
            .filter(|p| !state.scheduled.contains(p) && !state.recovering.contains_key(p))
            .copied()
            .collect();
        state.last_batch += 1;
        let batch = state.last_batch;
        state.recovering.extend(partitions.iter().map(|p| (*p, batch)));
        state.epochs = leased.clone();
        state.valid_until = valid_until;
        (Takeover { batch, partitions }, lost)
    }

    /// Stops scheduling `partition` (its lease is about to be given back): from here on this
    /// admin claims and sends nothing for it, before another admin can take it. A recovery of
    /// it under way will not schedule it (nor the rest of its takeover, taken over again).
    pub(crate) fn stop_scheduling(&self, partition: i64) {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        state.scheduled.remove(&partition);
        if let Some(batch) = state.recovering.get(&partition).copied() {
            state.recovering.retain(|_, b| *b != batch);
        }
    }

    /// Stops scheduling everything, keeping the leases: the next lease round finds every
    /// leased partition unscheduled and puts it through recovery again (see
    /// [`Partitions::keep_leased`]). For when runs may be pending that no timer holds.
    pub(crate) fn recover_again(&self) {
        self.state.write().unwrap_or_else(|p| p.into_inner()).scheduled.clear();
    }

    /// Stops scheduling everything at once (the leases are being given back), and returns
    /// every partition leased after the last round, scheduled or not.
    pub(crate) fn stop_all(&self) -> Vec<i64> {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        state.recovering.clear();
        let mut all = std::mem::take(&mut state.scheduled);
        all.extend(std::mem::take(&mut state.epochs).into_keys());
        all.into_iter().collect()
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

    /// Leases of `v`, all in epoch 1.
    fn set(v: &[i64]) -> BTreeMap<i64, i64> {
        v.iter().map(|p| (*p, 1)).collect()
    }

    /// A minute from now.
    fn soon() -> Option<Instant> {
        Some(Instant::now() + Duration::from_secs(60))
    }

    /// Recovers `takeover` at once: schedules it.
    fn recovered(parts: &Partitions, takeover: &Takeover) {
        assert_eq!(
            parts.start_scheduling(takeover, || ()),
            Some(()),
            "{takeover:?} is current"
        );
    }

    #[test]
    fn leased_partitions_are_scheduled_after_recovery_and_until_the_deadline() {
        let parts = Partitions::default();
        let (taken, lost) = parts.keep_leased(&set(&[1, 2]), soon());
        assert_eq!((taken.partitions.clone(), lost), (vec![1, 2], vec![]));
        assert!(!parts.holds(1), "not before recovery");
        recovered(&parts, &taken);
        assert!(parts.holds(1) && parts.holds(2));
        // Renewed with one partition fewer: that one is lost, nothing new to recover.
        let (taken, lost) = parts.keep_leased(&set(&[1]), soon());
        assert_eq!((taken.partitions, lost), (vec![], vec![2]));
        assert_eq!(parts.held(), vec![1]);
    }

    #[test]
    fn a_lapsed_deadline_stops_everything_and_renewal_recovers_again() {
        let parts = Partitions::default();
        let past = Some(Instant::now() - Duration::from_millis(1));
        let (taken, _) = parts.keep_leased(&set(&[3, 4]), soon());
        recovered(&parts, &taken);
        // The leases were last renewed too long ago (frozen process, database out of reach).
        let (taken, _) = parts.keep_leased(&set(&[3, 4]), past);
        recovered(&parts, &taken);
        assert!(!parts.holds(3), "nothing is sent past the deadline");
        assert!(parts.held().is_empty(), "nothing is claimed past the deadline");
        // Renewed again: both partitions go through recovery before they are scheduled.
        let (taken, lost) = parts.keep_leased(&set(&[3, 4]), soon());
        assert_eq!((taken.partitions, lost), (vec![3, 4], vec![3, 4]));
        assert!(!parts.holds(3));
    }

    #[test]
    fn without_a_deadline_the_partitions_never_lapse() {
        let parts = Partitions::default();
        let (taken, _) = parts.keep_leased(&set(&[0]), None);
        recovered(&parts, &taken);
        assert!(parts.holds(0));
        assert_eq!(parts.token(0), Some(1));
        assert!(!parts.let_go_unless_held(0, || panic!("held: nothing is let go")));
        let mut let_go = false;
        assert!(parts.let_go_unless_held(1, || let_go = true));
        assert!(let_go, "not held: let go");
    }

    /// Partitions scheduling `ids`, leased (in epoch 1) for a minute.
    fn scheduling(ids: &[i64]) -> Partitions {
        let parts = Partitions::default();
        let (taken, _) = parts.keep_leased(&set(ids), soon());
        recovered(&parts, &taken);
        parts
    }

    #[test]
    fn recovering_again_keeps_the_leases_and_recovers_them_all() {
        let parts = scheduling(&[1, 2]);
        parts.recover_again();
        assert!(parts.held().is_empty(), "nothing is claimed until recovered");
        let (taken, lost) = parts.keep_leased(&set(&[1, 2]), soon());
        assert_eq!((taken.partitions, lost), (vec![1, 2], vec![]));
    }

    #[test]
    fn a_lease_taken_again_in_a_new_epoch_is_recovered_again() {
        let parts = scheduling(&[5, 6]);
        assert_eq!(parts.token(5), Some(1));
        assert_eq!(parts.held_epochs(), vec![(5, 1), (6, 1)]);
        // Partition 5 lapsed and was taken again between two rounds: another admin may have
        // held it meanwhile, so its pending runs are read again before it is scheduled.
        let (taken, lost) = parts.keep_leased(&BTreeMap::from([(5, 2), (6, 1)]), soon());
        assert_eq!((taken.partitions.clone(), lost), (vec![5], vec![5]));
        assert_eq!(parts.token(5), None, "not before recovery");
        recovered(&parts, &taken);
        assert_eq!((parts.token(5), parts.token(6)), (Some(2), Some(1)));
        assert_eq!(parts.token(7), None, "not leased");
        // Held before and after, in a new epoch: what was kept of it is stale.
        assert_eq!(parts.held(), vec![5, 6]);
        assert_eq!(parts.held_epochs(), vec![(5, 2), (6, 1)]);
    }

    #[test]
    fn rounds_during_a_recovery_renew_without_taking_its_partitions_over_again() {
        let parts = Partitions::default();
        let (taken, _) = parts.keep_leased(&set(&[1, 2]), soon());
        // Renewed twice while the recovery reads: nothing new to recover, nothing lost.
        for _ in 0..2 {
            let (again, lost) = parts.keep_leased(&set(&[1, 2]), soon());
            assert_eq!((again.partitions, lost), (vec![], vec![]));
        }
        recovered(&parts, &taken);
        assert_eq!(parts.held(), vec![1, 2]);
    }

    #[test]
    fn a_recovery_overtaken_by_a_lapse_schedules_nothing() {
        let parts = Partitions::default();
        let (first, _) = parts.keep_leased(&set(&[1, 2]), Some(Instant::now() - Duration::from_millis(1)));
        // The next round finds the deadline passed: the partitions are taken over again, and
        // the first recovery, still reading, may no longer schedule them.
        let (second, _) = parts.keep_leased(&set(&[1, 2]), soon());
        assert_eq!(second.partitions, vec![1, 2]);
        assert_ne!(first.batch, second.batch);
        assert_eq!(parts.start_scheduling(&first, || "picked"), None);
        assert!(parts.held().is_empty());
        recovered(&parts, &second);
        assert_eq!(parts.held(), vec![1, 2]);
    }

    #[test]
    fn a_partition_lost_during_recovery_sends_its_whole_takeover_back() {
        let parts = Partitions::default();
        let (first, _) = parts.keep_leased(&set(&[1, 2]), soon());
        // Partition 2 changed hands before the recovery was done; 1 is still ours.
        let (second, _) = parts.keep_leased(&BTreeMap::from([(1, 1), (2, 2)]), soon());
        assert_eq!(second.partitions, vec![1, 2], "both recovered again");
        assert_eq!(parts.start_scheduling(&first, || ()), None);
        recovered(&parts, &second);
        assert_eq!(parts.held_epochs(), vec![(1, 1), (2, 2)]);
    }

    #[test]
    fn a_failed_recovery_is_taken_over_again_and_a_given_back_one_never_scheduled() {
        let parts = Partitions::default();
        let (first, _) = parts.keep_leased(&set(&[1, 2]), soon());
        parts.give_up_recovery(&first);
        let (second, _) = parts.keep_leased(&set(&[1, 2]), soon());
        assert_eq!(second.partitions, vec![1, 2]);
        // Partition 2 given back to a newly started admin while being recovered.
        parts.stop_scheduling(2);
        assert_eq!(parts.start_scheduling(&second, || ()), None);
        assert!(parts.held().is_empty());
        assert_eq!(parts.stop_all(), vec![1, 2], "every lease is given back at shutdown");
    }
}
