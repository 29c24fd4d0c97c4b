//! The probing strategies' common walk: the first address, in list order, that answers a
//! probe with success (FAILOVER asks `/beat`, BUSYOVER `/idleBeat`).

use crate::dispatch::client::{ExecutorClient, Target};
use crate::dispatch::gate::Gate;
use crate::model::Group;

/// What each address is asked.
#[derive(Debug, Clone, Copy)]
pub enum Probe {
    /// `/beat`: is the executor up?
    Beat,
    /// `/idleBeat`: is the job (this id) neither running nor queued there?
    IdleBeat(i64),
}

/// Probes addresses in order; `Ok(address, report)` or `Err(report)`, the report listing each
/// answer.
pub async fn first_answering(
    client: &ExecutorClient,
    gate: &Gate,
    probe: Probe,
    addresses: &[String],
    group: &Group,
) -> Result<(String, String), String> {
    let mut report = String::new();
    for address in addresses {
        // Probes are bounded like sends: per address first, then in total, held only while
        // on the wire.
        let Some(_pass) = gate.enter(address).await else {
            break;
        };
        let target = Target::of(group, address);
        let (title, r) = match probe {
            Probe::Beat => ("Heartbeats", client.beat(target).await),
            Probe::IdleBeat(job_id) => ("Idle check", client.idle_beat(target, job_id).await),
        };
        report.push_str(&format!(
            "<br>----------------------<br>{title}：<br>address：{address}<br>code：{}<br>msg：{}",
            r.code,
            r.msg.as_deref().unwrap_or("null")
        ));
        if r.is_success() {
            return Ok((address.clone(), report));
        }
    }
    Err(report)
}
