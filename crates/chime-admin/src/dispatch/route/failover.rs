//! FAILOVER: the first address (in list order) whose `/beat` answers success.

use super::probe::{first_answering, Probe};
use crate::dispatch::client::ExecutorClient;
use crate::dispatch::gate::Gate;
use crate::model::Group;

/// Probes addresses in order; `Ok(address, report)` or `Err(report)`.
pub async fn pick(
    client: &ExecutorClient,
    gate: &Gate,
    addresses: &[String],
    group: &Group,
) -> Result<(String, String), String> {
    first_answering(client, gate, Probe::Beat, addresses, group).await
}
