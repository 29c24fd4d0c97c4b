//! BUSYOVER: the first address (in list order) whose `/idleBeat` says the job is idle there.

use crate::dispatch::client::{ExecutorClient, Target};
use crate::dispatch::gate::Gate;
use crate::model::Group;

/// Probes addresses in order; `Ok(address, report)` or `Err(report)`.
pub async fn pick(
    client: &ExecutorClient,
    gate: &Gate,
    job_id: i64,
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
        let r = client.idle_beat(Target::of(group, address), job_id).await;
        report.push_str(&format!(
            "<br>----------------------<br>Idle check：<br>address：{address}<br>code：{}<br>msg：{}",
            r.code,
            r.msg.as_deref().unwrap_or("null")
        ));
        if r.is_success() {
            return Ok((address.clone(), report));
        }
    }
    Err(report)
}
