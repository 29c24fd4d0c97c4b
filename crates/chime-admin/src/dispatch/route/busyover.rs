//! BUSYOVER: the first address (in list order) whose `/idleBeat` says the job is idle there.

use super::probe::{first_answering, Probe};
use crate::dispatch::client::ExecutorClient;
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
    first_answering(client, gate, Probe::IdleBeat(job_id), addresses, group).await
}
