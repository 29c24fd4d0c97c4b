//! Runs: claiming due fires (`claim`), creating runs (`insert`), marking them as being sent
//! (`fence`), recording trigger results and callbacks with the follow-ups they cause
//! (`outcomes`), and reading runs (`queries`). The run
//! types themselves are in `crate::run`.

mod claim;
mod fence;
mod insert;
mod outcomes;
mod queries;
mod queue;

pub(in crate::store) use claim::DUE_COLUMNS;
pub use queue::{QueueEntry, QueuedRun, Slots, ADMITTED_EXPIRY_MS};

use super::bulk::Arg;
use super::job_columns::JOB_COLUMNS;
use super::rows;
use super::{Store, StoreResult};
use crate::model::Job;
use crate::run::{RunPayload, RunTicket};
use chime_protocol::TriggerType;
use sqlx::any::AnyRow;
use sqlx::AnyConnection;
use std::collections::HashMap;

/// The columns [`ticket`] reads, in its order.
const TICKET_COLUMNS: &str =
    "id, job_id, scheduled_at, trigger_type, handler, param, shard_index, shard_total, retry_count, lineage, trigger_code, \
     upstream, priority, concurrency_key";

/// [`TICKET_COLUMNS`] of `run r`, named, for queries that join other tables.
const TICKET_COLUMNS_OF_R: &str = "r.id AS id, r.job_id AS job_id, r.scheduled_at AS scheduled_at, \
     r.trigger_type AS trigger_type, r.handler AS handler, r.param AS param, r.shard_index AS shard_index, \
     r.shard_total AS shard_total, r.retry_count AS retry_count, r.lineage AS lineage, r.trigger_code AS trigger_code, \
     r.upstream AS upstream, r.priority AS priority, r.concurrency_key AS concurrency_key";

/// Reads [`TICKET_COLUMNS`] by position (see `rows::int` on MariaDB's `RETURNING`): the ticket
/// and the run's `trigger_code`.
fn ticket(row: &AnyRow) -> Result<(RunTicket, i64), sqlx::Error> {
    let tt = rows::text(row, 3)?;
    Ok((
        RunTicket {
            id: rows::int(row, 0)?,
            job_id: rows::int(row, 1)?,
            scheduled_at: rows::int(row, 2)?,
            trigger_type: tt.parse().unwrap_or(TriggerType::Cron),
            payload: RunPayload {
                handler: rows::text(row, 4)?,
                param: rows::text(row, 5)?,
                shard_index: rows::int(row, 6)?,
                shard_total: rows::int(row, 7)?,
                retry_count: rows::int(row, 8)?,
                lineage: rows::text(row, 9)?,
                upstream: rows::text(row, 11)?,
                flow: rows::run_flow(row, 12)?,
            },
        },
        rows::int(row, 10)?,
    ))
}

/// Rows per multi-row `UPDATE` (at most 10 values each: well under every engine's limit on bound
/// parameters).
pub(super) const UPDATE_ROWS: usize = 500;

impl Store {
    /// Full rows of the jobs `ids` (duplicates and missing ids allowed), by id.
    pub(in crate::store) async fn jobs_tx(
        &self,
        conn: &mut AnyConnection,
        ids: &[i64],
    ) -> StoreResult<HashMap<i64, Job>> {
        self.jobs_where(conn, "", ids).await
    }

    /// [`Store::jobs_tx`] limited to jobs with `filter` (an SQL condition, ending in `AND`).
    async fn jobs_where(&self, conn: &mut AnyConnection, filter: &str, ids: &[i64]) -> StoreResult<HashMap<i64, Job>> {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let sql = format!("SELECT {JOB_COLUMNS} FROM job WHERE {filter} id IN ({{in}})");
        let mut out = HashMap::new();
        for r in self.fetch_in(conn, &sql, &ids, &[] as &[Arg]).await? {
            let j = rows::job(&r)?;
            out.insert(j.id, j);
        }
        Ok(out)
    }
}
