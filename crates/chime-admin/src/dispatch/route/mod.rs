//! Route strategies: which executor of a group gets a run. One file per strategy; the
//! stateful ones (round robin, LFU, LRU) keep their state in this admin's memory, as XXL-JOB
//! does. SHARDING_BROADCAST is a fan-out, handled by the dispatcher with
//! [`sharding_broadcast::shard_address`].

pub mod busyover;
pub mod consistent_hash;
pub mod daily;
pub mod failover;
pub mod first;
pub mod last;
pub mod least_frequently_used;
pub mod least_recently_used;
pub mod probe;
pub mod random;
pub mod round;
pub mod sharding_broadcast;

use super::client::ExecutorClient;
use super::gate::Gate;
use crate::model::Group;
use chime_protocol::RouteStrategy;

/// The state of the stateful strategies.
#[derive(Debug, Default)]
pub struct Router {
    round: round::Round,
    lfu: least_frequently_used::LeastFrequentlyUsed,
    lru: least_recently_used::LeastRecentlyUsed,
}

/// The outcome of routing: an address, or why none; plus probe reports for the trigger message.
#[derive(Debug, Clone)]
pub struct Routed {
    /// Chosen address.
    pub address: Option<String>,
    /// Probe report (FAILOVER/BUSYOVER), or the reason no address was found.
    pub report: String,
}

impl Router {
    /// Picks an address of `addresses` (the group's addresses as registered, sorted) for a run
    /// of `job_id`. Probes (FAILOVER, BUSYOVER) wait for their turn at `gate`.
    #[allow(clippy::too_many_arguments)]
    pub async fn pick(
        &self,
        strategy: RouteStrategy,
        job_id: i64,
        addresses: &[String],
        client: &ExecutorClient,
        gate: &Gate,
        group: &Group,
        now_ms: i64,
    ) -> Routed {
        if addresses.is_empty() {
            return Routed {
                address: None,
                report: "Trigger Fail：registry address is empty".to_owned(),
            };
        }
        let simple = |a: Option<&String>| Routed {
            address: a.cloned(),
            report: String::new(),
        };
        match strategy {
            RouteStrategy::First => simple(first::pick(addresses)),
            RouteStrategy::Last => simple(last::pick(addresses)),
            RouteStrategy::Round => simple(self.round.pick(job_id, addresses, now_ms)),
            RouteStrategy::Random => simple(random::pick(addresses)),
            RouteStrategy::ConsistentHash => simple(consistent_hash::pick(job_id, addresses)),
            RouteStrategy::LeastFrequentlyUsed => simple(self.lfu.pick(job_id, addresses, now_ms)),
            RouteStrategy::LeastRecentlyUsed => simple(self.lru.pick(job_id, addresses, now_ms)),
            RouteStrategy::ShardingBroadcast => simple(sharding_broadcast::shard_address(addresses, 0)),
            RouteStrategy::Failover => probed(failover::pick(client, gate, addresses, group).await),
            RouteStrategy::Busyover => probed(busyover::pick(client, gate, job_id, addresses, group).await),
        }
    }
}

/// The route a probing strategy found: the address that answered, or none, with the report of
/// the probes either way.
fn probed(picked: Result<(String, String), String>) -> Routed {
    match picked {
        Ok((address, report)) => Routed {
            address: Some(address),
            report,
        },
        Err(report) => Routed { address: None, report },
    }
}
