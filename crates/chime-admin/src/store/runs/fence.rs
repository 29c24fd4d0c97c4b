//! Marking runs as being sent: the step that keeps two admins sharing a database from sending
//! the same run. Each mark is one guarded write, made just before the send; the database
//! refuses it when the run was marked or sent already, or when the lease its token names has
//! changed hands or lapsed by the database's clock. A run marked but without a trigger result
//! was possibly sent: recovery does not load it as pending (`Store::pending_runs`); the next
//! holder of its partition asks its executor whether it arrived and, if not, takes the mark
//! back and sends it (`Store::marked_runs`, `Store::unmark`); what is left is settled by the
//! lost-run sweep (`Store::unfinished_runs`).

use super::{ticket, TICKET_COLUMNS_OF_R, UPDATE_ROWS};
use crate::run::{MarkedRun, SendMark};
use crate::store::bulk::{bound, sized_query, Arg};
use crate::store::{rows, Store, StoreResult};
use std::collections::HashMap;

impl Store {
    /// Marks `marks` as being sent at `at` (epoch ms, stored as the runs' `triggered_at`), and
    /// returns the ids of the runs this call marked, in one statement per 500 runs. A run is
    /// marked only when it has no trigger result and nobody marked it before, and — for a
    /// scheduled run, whose token is positive — only while the lease of its job's partition
    /// still has that epoch and has not lapsed.
    ///
    /// `at` must be later than that of every earlier call with the same tokens (the marking
    /// task stamps its batches so), except when the same marks are asked again after an
    /// attempt whose answer was lost: when a statement marks fewer runs than it was given, the
    /// runs that now carry this call's token and `at` count as marked by it — by this attempt
    /// or by the lost one.
    pub async fn mark_sending(&self, marks: &[SendMark], at: i64) -> StoreResult<Vec<i64>> {
        let guard = format!(
            "run.trigger_code = 0 AND run.send_token = 0 AND (v.column2 < 0 OR EXISTS (\
             SELECT 1 FROM partition_lease l JOIN job j ON j.partition_no = l.partition_no \
             WHERE j.id = run.job_id AND l.epoch = v.column2 AND l.expires_at > {}))",
            self.backend.now_ms_sql()
        );
        let mut marked = Vec::with_capacity(marks.len());
        let mut conn = self.write.acquire().await?;
        for chunk in marks.chunks(UPDATE_ROWS) {
            let q = self.backend.update_by_id(
                "run",
                &["send_token", "executor_address", "triggered_at"],
                chunk.len(),
                &guard,
            );
            let mut query = sized_query(&q, chunk.len() * 4);
            for m in self.backend.padded(chunk) {
                query = query.bind(m.run_id).bind(m.token).bind(m.address.as_str()).bind(at);
            }
            let done = query.execute(&mut *conn).await?;
            if done.rows_affected() == chunk.len() as u64 {
                marked.extend(chunk.iter().map(|m| m.run_id));
                continue;
            }
            // Some were refused. A token names one sender (an epoch one holder of one
            // partition, a negative token one process), and `at` this call among its calls.
            let ids: Vec<i64> = chunk.iter().map(|m| m.run_id).collect();
            let now: HashMap<i64, [i64; 2]> = self
                .int_rows_in(
                    &mut conn,
                    "SELECT id, send_token, triggered_at FROM run WHERE id IN ({in})",
                    ["id", "send_token", "triggered_at"],
                    &ids,
                )
                .await?
                .into_iter()
                .map(|[id, token, stamped]| (id, [token, stamped]))
                .collect();
            marked.extend(
                chunk
                    .iter()
                    .filter(|m| now.get(&m.run_id) == Some(&[m.token, at]))
                    .map(|m| m.run_id),
            );
        }
        Ok(marked)
    }

    /// Scheduled runs of jobs in `partitions` that an admin marked as being sent
    /// ([`Store::mark_sending`], with a lease epoch) and that have no trigger result: those an
    /// admin holding the partition before may have sent just before it stopped.
    pub async fn marked_runs(&self, partitions: &[i64]) -> StoreResult<Vec<MarkedRun>> {
        if partitions.is_empty() {
            return Ok(Vec::new());
        }
        let q = format!(
            "SELECT {TICKET_COLUMNS_OF_R}, r.send_token AS send_token, r.executor_address AS executor_address, r.triggered_at AS triggered_at, \
             j.partition_no AS partition_no \
             FROM run r JOIN job j ON j.id = r.job_id \
             WHERE r.trigger_code = 0 AND r.handle_code = 0 AND r.send_token > 0 AND j.partition_no IN ({}) \
             ORDER BY r.scheduled_at",
            partitions.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",")
        );
        let all = sqlx::query(&q).fetch_all(&self.read).await?;
        let marked = all.iter().map(|r| -> Result<MarkedRun, sqlx::Error> {
            Ok(MarkedRun {
                ticket: ticket(r)?.0,
                // By name: the ticket's columns come first, as many as it has.
                token: rows::int(r, "send_token")?,
                address: rows::text(r, "executor_address")?,
                marked_at: rows::int(r, "triggered_at")?,
                partition: rows::int(r, "partition_no")?,
            })
        });
        Ok(marked.collect::<Result<_, _>>()?)
    }

    /// Takes back the mark `token` of run `run_id`, which its executor says it never received,
    /// so that the run is pending again, to be sent by the holder of its partition. Done only
    /// while the mark is still `token`, the run has no result, and the lease of the run's
    /// partition has epoch `epoch` (the caller's) and has not lapsed by the database's clock:
    /// of several admins looking at the same mark, one takes it back, and only while it holds
    /// the partition. True when taken back.
    pub async fn unmark(&self, run_id: i64, token: i64, epoch: i64) -> StoreResult<bool> {
        let text = format!(
            "UPDATE run SET send_token = 0 WHERE id = ? AND send_token = ? AND trigger_code = 0 AND handle_code = 0 \
             AND EXISTS (SELECT 1 FROM partition_lease l JOIN job j ON j.partition_no = l.partition_no \
             WHERE j.id = run.job_id AND l.epoch = ? AND l.expires_at > {})",
            self.backend.now_ms_sql()
        );
        let q = self.sql(&text);
        let done = bound(&q, &[Arg::Int(run_id), Arg::Int(token), Arg::Int(epoch)])
            .execute(&self.write)
            .await?;
        Ok(done.rows_affected() == 1)
    }
}
