//! Partition leases: each admin holds a fair share of the partitions, renews them every third
//! of the lease time, and takes over expired ones. A partition this process did not schedule
//! before may hold pending runs — another admin's, or its own from before a crash when it is
//! restarted with the same `--node-id` — so every such partition goes through recovery first,
//! and is scheduled only after it (see [`super::recover`]).

use super::ToRecover;
use crate::link::LinkHub;
use crate::pipeline::partitions::{Partitions, Takeover};
use crate::store::{Backend, Lease, LeaseTable, Store, PARTITIONS};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// This admin as a holder of partition leases: what a lease round works with. Cheap to clone.
#[derive(Debug, Clone)]
pub struct LeaseHolder {
    /// Where leases are kept.
    pub(crate) store: Store,
    /// This admin's name (`--node-id`), the owner of its leases.
    pub(crate) node_id: String,
    /// `--lease-ttl`.
    pub(crate) ttl: Duration,
    /// The scheduling set, narrowed to the leases held after each round.
    pub(crate) partitions: Arc<Partitions>,
    /// The base URL other admins reach this one at (announced with it).
    pub(crate) url: String,
    /// Told the other live admins' URLs each round, to relay calls to executors linked there.
    pub(crate) links: Arc<LinkHub>,
}

/// What the lease loop works with.
#[derive(Debug)]
pub struct LeaseLoop {
    /// Who holds the leases.
    pub(crate) holder: LeaseHolder,
    /// Where the partitions taken over go to be recovered ([`super::recover_takeovers`]),
    /// beside the rounds: a long recovery must not hold back the renewals.
    pub(crate) to_recover: mpsc::UnboundedSender<ToRecover>,
    /// Cancelled to stop (and give the leases back).
    pub(crate) shutdown: CancellationToken,
}

/// The share of the lease time kept in hand: this admin stops acting for its partitions this
/// much before their leases can lapse in the database (see `Partitions`). It covers the
/// database's clock running at a slightly different rate than this process's monotonic clock,
/// and the moment between a check and a send.
fn safety_margin(ttl: Duration) -> Duration {
    (ttl / 5).max(Duration::from_millis(100)).min(ttl / 2)
}

/// One round: renew, rebalance, take over. Returns the partitions this process holds now and
/// neither scheduled nor was recovering before the round: they are left out of the scheduling
/// set until [`super::recover`] has read their pending runs and puts them in.
///
/// Every time in the lease table is the database's clock (read with the leases), so admins
/// with skewed clocks agree on expiry; this process's own deadline is its monotonic clock from
/// the start of the round, which neither a frozen process nor a wall-clock jump can stretch.
pub async fn balance(holder: &LeaseHolder, first: bool) -> crate::store::StoreResult<Takeover> {
    let started = Instant::now();
    let ttl = holder.ttl.as_millis() as i64;
    let me = holder.node_id.as_str();
    let store = &holder.store;
    let sqlite = store.backend() == Backend::Sqlite;
    // SQLite is a single-admin database: the previous process (maybe killed a moment ago)
    // cannot still be scheduling, so take everything at once instead of waiting for expiry.
    let force = first && sqlite;
    let LeaseTable { leases, now } = store.lease_table().await?;
    // Admins that announced themselves count too: a new one holds no lease yet. (Not on
    // SQLite, the single-admin database, where a killed predecessor's row would halve the share.)
    let live: Vec<String> = if sqlite {
        Vec::new()
    } else {
        let admins = store.announce_admin(me, &holder.url, now, now + ttl).await?;
        holder.links.set_peers(
            admins
                .iter()
                .filter(|a| a.node_id != me && !a.url.is_empty())
                .map(|a| a.url.clone())
                .collect(),
        );
        admins.into_iter().map(|a| a.node_id).collect()
    };
    let mut owners: HashSet<&str> = leases
        .iter()
        .filter(|l| l.expires_at > now && !l.owner.is_empty())
        .map(|l| l.owner.as_str())
        .collect();
    owners.extend(live.iter().map(String::as_str));
    owners.insert(me);
    let fair = (PARTITIONS as usize).div_ceil(owners.len());
    // Renew what is still ours, in one statement (epochs unchanged); should one have been
    // taken over between the read and the update (it had lapsed), ask partition by partition.
    let mine: Vec<&Lease> = leases.iter().filter(|l| l.owner == me && l.expires_at > now).collect();
    let ids: Vec<i64> = mine.iter().map(|l| l.partition).collect();
    // Partition → epoch, of the leases held after this round.
    let mut held: BTreeMap<i64, i64> = BTreeMap::new();
    if store.renew_leases(&ids, me, now + ttl).await? == ids.len() as u64 {
        held.extend(mine.iter().map(|l| (l.partition, l.epoch)));
    } else {
        for l in mine {
            if let Some(epoch) = store.acquire_lease(l, me, now, now + ttl, false).await? {
                held.insert(l.partition, epoch);
            }
        }
    }
    // Give back partitions beyond the fair share so a newly started admin gets work.
    while held.len() > fair {
        let Some((&p, _)) = held.iter().next_back() else { break };
        holder.partitions.stop_scheduling(p);
        store.release_lease(p, me).await?;
        held.remove(&p);
    }
    for l in &leases {
        if held.len() >= fair && !force {
            break;
        }
        if held.contains_key(&l.partition) {
            continue;
        }
        let free = l.owner.is_empty() || l.expires_at <= now;
        if free || force {
            if let Some(epoch) = store.acquire_lease(l, me, now, now + ttl, force).await? {
                held.insert(l.partition, epoch);
            }
        }
    }
    // No other admin takes a SQLite database's leases, so its admin has no deadline: a slow
    // write under load must not stop its sending.
    let valid_until = (!sqlite).then(|| started + holder.ttl - safety_margin(holder.ttl));
    // Compared with what this process schedules, not with who owned the lease: a lease still
    // in this node's name may come from a predecessor killed a moment ago, whose claimed runs
    // nobody has sent yet.
    let (taken, lost) = holder.partitions.keep_leased(&held, valid_until);
    if !lost.is_empty() {
        tracing::info!(partitions = ?lost, "partition leases lost, given back or lapsed");
    }
    Ok(taken)
}

/// Keeps leases until shutdown, then releases them.
pub async fn run(lease: LeaseLoop) {
    let LeaseLoop {
        holder,
        to_recover,
        shutdown,
    } = lease;
    // Rounds start at a fixed rate, not a fixed pause after the previous round: a slow round
    // then does not push the next renewal past this admin's deadline (see `balance`).
    let mut rounds = tokio::time::interval_at(tokio::time::Instant::now() + holder.ttl / 3, holder.ttl / 3);
    rounds.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = rounds.tick() => {}
        }
        // A round that outlasts the lease time is of no use any more (the deadline it would
        // set has passed) and, on a connection the network dropped silently, could wait for
        // TCP to give up — many minutes in which this admin would neither renew nor notice
        // the way back. Abandoned, its connection is closed, and the next round opens another.
        let round = match tokio::time::timeout(holder.ttl, balance(&holder, false)).await {
            Ok(round) => round,
            Err(_) => {
                tracing::warn!(ttl = ?holder.ttl, "lease round took longer than the lease time; abandoned");
                continue;
            }
        };
        match round {
            Ok(taken) if !taken.is_empty() => {
                tracing::info!(partitions = ?taken.partitions, "took over partitions");
                let _ = to_recover.send(ToRecover {
                    takeover: taken,
                    done: None,
                });
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "lease renewal failed"),
        }
    }
    for p in holder.partitions.stop_all() {
        let _ = holder.store.release_lease(p, &holder.node_id).await;
    }
    let _ = holder.store.withdraw_admin(&holder.node_id).await;
}
