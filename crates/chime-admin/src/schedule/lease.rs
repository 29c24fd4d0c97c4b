//! Partition leases: each admin holds a fair share of the partitions, renews them every third
//! of the lease time, and takes over expired ones. A partition this process did not schedule
//! before may hold pending runs — another admin's, or its own from before a crash when it is
//! restarted with the same `--node-id` — so every such partition goes through recovery first,
//! and is scheduled only after it (see [`super::recover`]).

use crate::center::Admin;
use crate::model::now_ms;
use crate::store::{Backend, PARTITIONS};
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

/// One round: renew, rebalance, take over. Returns the partitions this process holds now and
/// did not schedule before the round: they are left out of the scheduling set until
/// [`super::recover`] has read their pending runs and puts them in.
pub async fn balance(admin: &Arc<Admin>, first: bool) -> crate::store::StoreResult<Vec<i64>> {
    let now = now_ms();
    let ttl = admin.config.lease_ttl.as_millis() as i64;
    let me = admin.config.node_id.as_str();
    let store = &admin.store;
    // SQLite is a single-admin database: the previous process (maybe killed a moment ago)
    // cannot still be scheduling, so take everything at once instead of waiting for expiry.
    let force = first && store.backend() == Backend::Sqlite;
    let leases = store.leases().await?;
    // Admins that announced themselves count too: a new one holds no lease yet. (Not on
    // SQLite, the single-admin database, where a killed predecessor's row would halve the share.)
    let live = match store.backend() {
        Backend::Sqlite => Vec::new(),
        _ => store.announce_admin(me, now, now + ttl).await?,
    };
    let mut owners: HashSet<&str> = leases
        .iter()
        .filter(|l| l.expires_at > now && !l.owner.is_empty())
        .map(|l| l.owner.as_str())
        .collect();
    owners.extend(live.iter().map(String::as_str));
    owners.insert(me);
    let fair = (PARTITIONS as usize).div_ceil(owners.len());
    let mut held: BTreeSet<i64> = BTreeSet::new();
    for l in leases.iter().filter(|l| l.owner == me && l.expires_at > now) {
        if store.acquire_lease(l.partition, me, now, now + ttl, false).await? {
            held.insert(l.partition);
        }
    }
    // Give back partitions beyond the fair share so a newly started admin gets work.
    while held.len() > fair {
        let Some(&p) = held.iter().next_back() else { break };
        store.release_lease(p, me).await?;
        held.remove(&p);
    }
    for l in &leases {
        if held.len() >= fair && !force {
            break;
        }
        if held.contains(&l.partition) {
            continue;
        }
        let free = l.owner.is_empty() || l.expires_at <= now;
        if (free || force) && store.acquire_lease(l.partition, me, now, now + ttl, force).await? {
            held.insert(l.partition);
        }
    }
    // Compared with what this process schedules, not with who owned the lease: a lease still
    // in this node's name may come from a predecessor killed a moment ago, whose claimed runs
    // nobody has sent yet.
    let (acquired, lost) = {
        let mut scheduling = admin.held.write().unwrap_or_else(|p| p.into_inner());
        let acquired: Vec<i64> = held.difference(&scheduling).copied().collect();
        let lost: Vec<i64> = scheduling.difference(&held).copied().collect();
        scheduling.retain(|p| held.contains(p));
        (acquired, lost)
    };
    if !lost.is_empty() {
        tracing::info!(partitions = ?lost, "partition leases lost or given back");
    }
    Ok(acquired)
}

/// Keeps leases until shutdown, then releases them.
pub async fn run(admin: Arc<Admin>) {
    let period = admin.config.lease_ttl / 3;
    loop {
        tokio::select! {
            _ = admin.shutdown.cancelled() => break,
            _ = tokio::time::sleep(period) => {}
        }
        match balance(&admin, false).await {
            Ok(acquired) if !acquired.is_empty() => {
                tracing::info!(partitions = ?acquired, "took over partitions");
                if let Err(e) = super::recover(&admin, &acquired).await {
                    tracing::warn!(error = %e, "recovering pending runs failed");
                }
                admin.claim_notify.notify_one();
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "lease renewal failed"),
        }
    }
    let held: Vec<i64> = admin
        .held
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .copied()
        .collect();
    for p in held {
        let _ = admin.store.release_lease(p, &admin.config.node_id).await;
    }
    let _ = admin.store.withdraw_admin(&admin.config.node_id).await;
}
