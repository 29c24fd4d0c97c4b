//! Alarm bookkeeping on the run's `alarm_status` column, with XXL-JOB's values: 0 nothing
//! done yet, -1 an admin is sending the alarm, 1 no alarm needed (also: a retry or child run
//! was made), 2 alarm sent, 3 sending failed. The claim is a guarded `UPDATE … WHERE alarm_status = 0`, so
//! with several admins, repeated notifications and sweeps an alarm is sent at most once.

use super::rows;
use super::{Store, StoreResult};
use sqlx::AnyConnection;

/// `alarm_status` values (XXL-JOB's).
pub mod alarm_status {
    /// Nothing decided yet.
    pub const NONE: i64 = 0;
    /// Claimed: an admin is sending the alarm.
    pub const LOCKED: i64 = -1;
    /// No alarm needed: nobody to tell, or a retry or child run was made for the run.
    pub const NOT_NEEDED: i64 = 1;
    /// Alarm sent.
    pub const SENT: i64 = 2;
    /// Every delivery attempt failed.
    pub const FAILED: i64 = 3;
}

/// The SQL condition of a finally failed run, as `RunStatus::Failed` has it: it could not be
/// sent, or the executor (or the lost sweep, or a kill) reported a failure. A failure reported
/// before the trigger result was recorded (a fast executor's callback can beat the admin's own
/// bookkeeping) finds `trigger_code` still 0 and counts too: the trigger result that follows
/// claims nothing, so this claim is the alarm's only chance before the periodic sweep.
/// Written as ranges on `(trigger_code, handle_code)` so the `run_state` index can serve it
/// instead of a scan of every run.
pub(super) const FAILED: &str = "(((trigger_code = 200 OR trigger_code = 0) AND (handle_code > 200 \
     OR handle_code < 0 OR (handle_code > 0 AND handle_code < 200))) OR trigger_code > 200 \
     OR trigger_code < -1 OR (trigger_code > 0 AND trigger_code < 200))";

/// Longest `alarm_msg` stored, in characters (the column's size).
const ALARM_MSG_CHARS: usize = 500;

/// `msg` cut to [`ALARM_MSG_CHARS`] characters, marked with `…` when cut.
pub(super) fn bounded_alarm_msg(msg: &str) -> String {
    crate::model::cut_chars(msg, ALARM_MSG_CHARS)
}

impl Store {
    /// Claims the alarms of those `run_ids` that failed for good and whose alarm nobody has
    /// claimed yet (`alarm_status` 0 → -1). A run whose failure made a retry already has
    /// status 1 (no alarm needed) and is not claimed. Returns the claimed ids.
    pub async fn claim_alarms(&self, run_ids: &[i64]) -> StoreResult<Vec<i64>> {
        let mut conn = self.write.acquire().await?;
        let mut claimed = Vec::new();
        // One statement per run: the affected-row count says whether this admin won the claim,
        // and failures are few compared to fires.
        for id in run_ids {
            if self.claim_run_alarm(&mut conn, *id, alarm_status::LOCKED, None).await? {
                claimed.push(*id);
            }
        }
        Ok(claimed)
    }

    /// The guarded claim of run `run_id`'s alarm on `conn`: `alarm_status` 0 → `status`, with
    /// `why` stored on the run when given, only while the run failed for good and nobody has
    /// claimed its alarm. Returns whether this call won the claim. Every claim of a run's
    /// alarm goes through here, so the guard is written once.
    pub(super) async fn claim_run_alarm(
        &self,
        conn: &mut AnyConnection,
        run_id: i64,
        status: i64,
        why: Option<&str>,
    ) -> StoreResult<bool> {
        let set = if why.is_some() {
            "alarm_status = ?, alarm_msg = ?"
        } else {
            "alarm_status = ?"
        };
        let q = self.sql_text(format!(
            "UPDATE run SET {set} WHERE id = ? AND alarm_status = ? AND {FAILED}"
        ));
        let mut update = sqlx::query(&q).bind(status);
        if let Some(why) = why {
            update = update.bind(bounded_alarm_msg(why));
        }
        let done = update.bind(run_id).bind(alarm_status::NONE).execute(conn).await?;
        Ok(done.rows_affected() == 1)
    }

    /// Records how a claimed alarm ended (1 not needed, 2 sent, 3 failed) and why it was not
    /// delivered (`msg`, empty otherwise; cut to `ALARM_MSG_CHARS`). The caller keeps
    /// secrets out of `msg`. Returns whether this call ended the claim (another admin may
    /// have already).
    pub async fn finish_alarm(&self, run_id: i64, status: i64, msg: &str) -> StoreResult<bool> {
        let q = self.sql("UPDATE run SET alarm_status = ?, alarm_msg = ? WHERE id = ? AND alarm_status = ?");
        let done = sqlx::query(&q)
            .bind(status)
            .bind(bounded_alarm_msg(msg))
            .bind(run_id)
            .bind(alarm_status::LOCKED)
            .execute(&self.write)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Failed runs created since `since` whose alarm nobody claimed (an admin stopped between
    /// recording the failure and claiming its alarm), oldest first, at most `limit`.
    pub async fn unclaimed_alarms(&self, since: i64, limit: i64) -> StoreResult<Vec<i64>> {
        let q = self.sql_text(format!(
            "SELECT id FROM run WHERE {FAILED} AND alarm_status = ? AND created_at >= ? ORDER BY id LIMIT ?"
        ));
        let all = sqlx::query(&q)
            .bind(alarm_status::NONE)
            .bind(since)
            .bind(limit)
            .fetch_all(&self.read)
            .await?;
        all.iter().map(|r| Ok(rows::int(r, "id")?)).collect()
    }

    /// `alarm_status` of each of `run_ids` (for tests; the API reads it with the run).
    pub async fn alarm_statuses(&self, run_ids: &[i64]) -> StoreResult<Vec<(i64, i64)>> {
        let sql = "SELECT id, alarm_status FROM run WHERE id IN ({in}) ORDER BY id";
        self.read_in(sql, run_ids, &[])
            .await?
            .iter()
            .map(|r| Ok((rows::int(r, "id")?, rows::int(r, "alarm_status")?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alarm_messages_are_bounded() {
        assert_eq!(
            bounded_alarm_msg("webhook: answered HTTP 500"),
            "webhook: answered HTTP 500"
        );
        let long = "é".repeat(ALARM_MSG_CHARS * 2);
        let cut = bounded_alarm_msg(&long);
        assert_eq!(cut.chars().count(), ALARM_MSG_CHARS);
        assert!(cut.ends_with('…'));
    }
}
