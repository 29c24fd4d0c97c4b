//! The outbox of alarm deliveries (`alarm_delivery`): one row per run and channel, written in
//! the transaction that claims the run's alarm, so nothing is sent that was not stored first
//! and nothing stored is forgotten when an admin stops.
//!
//! A delivery is sent by whichever admin takes its lease (`lease_until`, a guarded `UPDATE`
//! like a run's claim), so one admin at a time sends it; an admin killed while sending leaves
//! the lease to run out, and the delivery is then taken again (by a restarted admin or another
//! one). Each attempt is counted when its lease is taken, so a delivery that kills its admin
//! cannot be retried forever. When a run's last delivery ends, the run's `alarm_status` says
//! how they went: 2 when all were sent, 3 when one failed, with which and why in `alarm_msg`.

use super::alarms::alarm_status;
use super::bulk::Arg;
use super::rows;
use super::{Store, StoreResult};
use crate::model::{cut_chars, now_ms, AlarmDelivery, AlarmEvent, ChannelKind, DeliveryState, SKIPPED_CODE};
use sqlx::any::AnyRow;
use sqlx::{Any, Transaction};

/// Longest error kept on a delivery, in characters (the column's size).
const ERROR_CHARS: usize = 500;

/// A delivery to be stored with its run's claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDelivery {
    /// The named channel's id; `None` for the job's e-mail contacts and `--alarm-webhook`.
    pub channel_id: Option<i64>,
    /// The channel's name (`contacts`, `alarm-webhook` for the two above).
    pub channel: String,
    /// Its kind.
    pub kind: ChannelKind,
}

/// How a claim of a run's alarm went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlarmClaim {
    /// Another admin claimed it, or the run needs no alarm (it did not fail for good, or a
    /// retry was made).
    NotOurs,
    /// Claimed, with nobody to tell: recorded as needing no alarm.
    NobodyToTell,
    /// Claimed while a silence window covers the run: recorded as needing no alarm, with the
    /// window in `alarm_msg`.
    Silenced,
    /// Claimed within the job's `at_most_every` of its last failure alarm: recorded as
    /// needing no alarm, with the run that was alarmed in `alarm_msg`.
    RateLimited,
    /// Claimed, and this many deliveries stored.
    Stored(usize),
}

/// What a delivery tells of: a run's alarm, or an alarm no run raised (`alarm_event`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DeliveryOf {
    /// The run's id.
    Run(i64),
    /// The alarm event's id.
    Event(i64),
}

/// A delivery this admin holds the lease of, to send now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeasedDelivery {
    /// Delivery id.
    pub id: i64,
    /// Its run; 0 for an alarm no run raised.
    pub run_id: i64,
    /// The alarm event it belongs to (`alarm_event`); 0 for a run's alarm.
    pub event_id: i64,
    /// The named channel, if any.
    pub channel_id: Option<i64>,
    /// The channel's name.
    pub channel: String,
    /// Its kind.
    pub kind: ChannelKind,
    /// What it tells.
    pub event: AlarmEvent,
    /// Attempts made, this one included.
    pub attempts: i64,
}

/// A job whose alarmed failure is followed by a success: its recovery is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovered {
    /// The job.
    pub job_id: i64,
    /// The alarmed failure that opened the incident.
    pub failed_run: i64,
    /// The first success after it.
    pub ok_run: i64,
}

/// Most runs read back to count a job's failures in a row.
const STREAK_WINDOW: i64 = 10_000;
/// Runs read per page while counting them.
const STREAK_PAGE: i64 = 64;

const DELIVERY_COLUMNS: &str =
    "id, run_id, channel_id, channel, kind, event, state, attempts, error, created_at, sent_at";

/// A delivery as stored.
pub(super) fn delivery(row: &AnyRow) -> Result<AlarmDelivery, sqlx::Error> {
    Ok(AlarmDelivery {
        id: rows::int(row, "id")?,
        run_id: rows::int(row, "run_id")?,
        channel: rows::text(row, "channel")?,
        kind: rows::parsed(row, "kind")?,
        event: AlarmEvent::parse(&rows::text(row, "event")?),
        state: DeliveryState::from_code(rows::int(row, "state")?),
        attempts: rows::int(row, "attempts")?,
        error: rows::text(row, "error")?,
        created_at: rows::int(row, "created_at")?,
        sent_at: rows::int(row, "sent_at")?,
    })
}

impl Store {
    /// Claims run `run_id`'s alarm (`alarm_status` 0 → -1, only if it failed for good) and
    /// stores its `deliveries`, in one transaction; with no deliveries the claim records that
    /// no alarm is needed (1). With `incident_of`, a job whose recovery is to be told, the
    /// job's incident is opened too (if none is open), so its next success is reported.
    pub async fn claim_alarm(
        &self,
        run_id: i64,
        deliveries: &[NewDelivery],
        incident_of: Option<i64>,
    ) -> StoreResult<AlarmClaim> {
        let now = now_ms();
        let status = if deliveries.is_empty() {
            alarm_status::NOT_NEEDED
        } else {
            alarm_status::LOCKED
        };
        let mut tx = self.write.begin().await?;
        let claimed = self.claim_run_alarm(&mut tx, run_id, status, None).await?;
        if !claimed {
            return Ok(AlarmClaim::NotOurs);
        }
        self.insert_deliveries(&mut tx, DeliveryOf::Run(run_id), deliveries, AlarmEvent::Failed, now)
            .await?;
        if let (Some(job_id), false) = (incident_of, deliveries.is_empty()) {
            // An incident already open keeps the failure that opened it.
            self.claim_row(
                &mut tx,
                "alarm_incident (job_id, run_id, opened_at)",
                &[Arg::Int(job_id), Arg::Int(run_id), Arg::Int(now)],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(if deliveries.is_empty() {
            AlarmClaim::NobodyToTell
        } else {
            AlarmClaim::Stored(deliveries.len())
        })
    }

    /// Stores `deliveries` of `event` in `tx`, for what `of` names.
    pub(super) async fn insert_deliveries(
        &self,
        tx: &mut sqlx::AnyConnection,
        of: DeliveryOf,
        deliveries: &[NewDelivery],
        event: AlarmEvent,
        now: i64,
    ) -> StoreResult<()> {
        let (run_id, event_id) = match of {
            DeliveryOf::Run(id) => (id, 0),
            DeliveryOf::Event(id) => (0, id),
        };
        let insert = self.sql(
            "INSERT INTO alarm_delivery (run_id, event_id, channel_id, channel, kind, event, next_at, created_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        );
        for d in deliveries {
            sqlx::query(&insert)
                .bind(run_id)
                .bind(event_id)
                .bind(d.channel_id)
                .bind(&d.channel)
                .bind(d.kind.as_str())
                .bind(event.as_str())
                .bind(now)
                .bind(now)
                .execute(&mut *tx)
                .await?;
        }
        Ok(())
    }

    /// Claims run `run_id`'s alarm as not needed (1), saying why on the run (`why`: the silence
    /// window that covers it, or the policy waiting for more failures), in the guarded `UPDATE`
    /// of [`Store::claim_alarm`]; returns whether this admin claimed it.
    pub async fn claim_alarm_not_needed(&self, run_id: i64, why: &str) -> StoreResult<bool> {
        let mut conn = self.write.acquire().await?;
        self.claim_run_alarm(&mut conn, run_id, alarm_status::NOT_NEEDED, Some(why))
            .await
    }

    /// The run whose failure of job `job_id` was last alarmed (its deliveries stored) at or
    /// after `since`, epoch ms; `None` when none was.
    pub async fn last_failure_alarm(&self, job_id: i64, since: i64) -> StoreResult<Option<i64>> {
        let q = self.sql(
            "SELECT d.run_id AS run_id FROM alarm_delivery d JOIN run r ON r.id = d.run_id \
             WHERE r.job_id = ? AND d.event = 'failed' AND d.created_at >= ? ORDER BY d.created_at DESC LIMIT 1",
        );
        let row = sqlx::query(&q)
            .bind(job_id)
            .bind(since)
            .fetch_optional(&self.write)
            .await?;
        Ok(row.map(|r| rows::int(&r, "run_id")).transpose()?)
    }

    /// How many of job `job_id`'s runs up to `run_id` (included) failed in a row: runs that
    /// ended, not counting a failure that was retried (its retry counts), a skipped misfire or
    /// a run still open; a success ends the count.
    pub async fn failure_streak(&self, job_id: i64, run_id: i64) -> StoreResult<u32> {
        let q = self.sql(
            "SELECT r.id AS id, r.trigger_code AS trigger_code, r.handle_code AS handle_code, \
             (SELECT MIN(l.id) FROM run l WHERE l.retry_of = r.id) AS retried_by \
             FROM run r WHERE r.job_id = ? AND r.id <= ? ORDER BY r.id DESC LIMIT ?",
        );
        let (mut streak, mut read, mut below) = (0u32, 0i64, run_id);
        // Read backwards a page at a time: a success usually ends the count within a few runs,
        // and a long outage is counted up to STREAK_WINDOW runs without holding them all.
        while read < STREAK_WINDOW {
            let page = sqlx::query(&q)
                .bind(job_id)
                .bind(below)
                .bind(STREAK_PAGE)
                .fetch_all(&self.write)
                .await?;
            for row in &page {
                let (trigger, handle) = (rows::int(row, "trigger_code")?, rows::int(row, "handle_code")?);
                let open = handle == 0 && (trigger == 0 || trigger == 200);
                if open || trigger == SKIPPED_CODE || rows::int(row, "retried_by")? > 0 {
                    continue;
                }
                if handle == 200 {
                    return Ok(streak);
                }
                streak += 1;
            }
            let Some(last) = page.last() else { break };
            if page.len() < STREAK_PAGE as usize {
                break;
            }
            below = rows::int(last, "id")? - 1;
            read += STREAK_PAGE;
        }
        Ok(streak)
    }

    /// Open incidents whose job has succeeded since: their recoveries are due.
    pub async fn recovered_incidents(&self) -> StoreResult<Vec<Recovered>> {
        let q = "SELECT i.job_id AS job_id, i.run_id AS run_id, \
                 (SELECT MIN(r.id) FROM run r WHERE r.job_id = i.job_id AND r.id > i.run_id AND r.handle_code = 200) AS ok_run \
                 FROM alarm_incident i";
        let all = sqlx::query(q).fetch_all(&self.write).await?;
        let mut due = Vec::new();
        for row in &all {
            let ok_run = rows::int(row, "ok_run")?;
            if ok_run > 0 {
                due.push(Recovered {
                    job_id: rows::int(row, "job_id")?,
                    failed_run: rows::int(row, "run_id")?,
                    ok_run,
                });
            }
        }
        Ok(due)
    }

    /// Deletes, in a new transaction, the one incident row `delete` (`DELETE … WHERE a = ? AND
    /// b = ?`) names by `keys`; that transaction, to store in it the alarm that follows, when
    /// this call deleted the row, `None` (rolled back) when another admin closed it first.
    /// Closing an incident is the claim of the alarm that follows it (a recovery, an
    /// executor's return), so with several admins only the one whose delete won goes on.
    pub(super) async fn close_incident(
        &self,
        delete: &str,
        keys: [i64; 2],
    ) -> StoreResult<Option<Transaction<'static, Any>>> {
        let mut tx = self.write.begin().await?;
        let q = self.sql(delete);
        let done = sqlx::query(&q).bind(keys[0]).bind(keys[1]).execute(&mut *tx).await?;
        Ok((done.rows_affected() == 1).then_some(tx))
    }

    /// Closes `recovered`'s incident and stores the recovery's `deliveries` on its successful
    /// run, in one transaction; false when another admin closed it first.
    pub async fn claim_recovery(&self, recovered: Recovered, deliveries: &[NewDelivery]) -> StoreResult<bool> {
        let delete = "DELETE FROM alarm_incident WHERE job_id = ? AND run_id = ?";
        let Some(mut tx) = self
            .close_incident(delete, [recovered.job_id, recovered.failed_run])
            .await?
        else {
            return Ok(false);
        };
        self.insert_deliveries(
            &mut tx,
            DeliveryOf::Run(recovered.ok_run),
            deliveries,
            AlarmEvent::Recovered,
            now_ms(),
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Pending deliveries due by `now` whose lease (if any) has run out, oldest first, each with
    /// its named channel (`None`: the job's e-mail contacts or the admin's webhook).
    pub async fn due_deliveries(&self, now: i64, limit: i64) -> StoreResult<Vec<(i64, Option<i64>)>> {
        let q = self.sql(
            "SELECT id, channel_id FROM alarm_delivery WHERE state = 0 AND next_at <= ? AND lease_until <= ? \
             ORDER BY next_at, id LIMIT ?",
        );
        let due = sqlx::query(&q)
            .bind(now)
            .bind(now)
            .bind(limit)
            .fetch_all(&self.write)
            .await?;
        due.iter()
            .map(|r| {
                let channel = rows::int(r, "channel_id")?;
                Ok((rows::int(r, "id")?, (channel != 0).then_some(channel)))
            })
            .collect()
    }

    /// Takes delivery `id`'s lease until `now + lease_ms` and counts the attempt, if it is
    /// still pending, due and free; `None` when another admin has it or it ended.
    pub async fn lease_delivery(&self, id: i64, now: i64, lease_ms: i64) -> StoreResult<Option<LeasedDelivery>> {
        let q = self.sql(
            "UPDATE alarm_delivery SET lease_until = ?, attempts = attempts + 1 \
             WHERE id = ? AND state = 0 AND next_at <= ? AND lease_until <= ?",
        );
        let taken = sqlx::query(&q)
            .bind(now + lease_ms)
            .bind(id)
            .bind(now)
            .bind(now)
            .execute(&self.write)
            .await?
            .rows_affected()
            == 1;
        if !taken {
            return Ok(None);
        }
        let q = self.sql(
            "SELECT id, run_id, event_id, channel_id, channel, kind, event, attempts FROM alarm_delivery WHERE id = ?",
        );
        let row = sqlx::query(&q).bind(id).fetch_one(&self.write).await?;
        let channel_id = rows::int(&row, "channel_id")?;
        Ok(Some(LeasedDelivery {
            id,
            run_id: rows::int(&row, "run_id")?,
            event_id: rows::int(&row, "event_id")?,
            channel_id: (channel_id != 0).then_some(channel_id),
            channel: rows::text(&row, "channel")?,
            kind: rows::parsed(&row, "kind")?,
            event: AlarmEvent::parse(&rows::text(&row, "event")?),
            attempts: rows::int(&row, "attempts")?,
        }))
    }

    /// Records how an attempt of delivery `id` went: sent; failed with `retry_at` (the next
    /// attempt's time); or failed for good (`retry_at` `None`). `error` holds no secret (the
    /// caller's duty). Returns whether the delivery ended.
    pub async fn record_attempt(&self, id: i64, outcome: Result<(), (&str, Option<i64>)>) -> StoreResult<bool> {
        let now = now_ms();
        let (sql, ended) = match outcome {
            Ok(()) => (
                "UPDATE alarm_delivery SET state = 1, sent_at = ?, error = ?, lease_until = 0 WHERE id = ? AND state = 0",
                true,
            ),
            Err((_, Some(_))) => (
                "UPDATE alarm_delivery SET next_at = ?, error = ?, lease_until = 0 WHERE id = ? AND state = 0",
                false,
            ),
            Err((_, None)) => (
                "UPDATE alarm_delivery SET state = 2, sent_at = ?, error = ?, lease_until = 0 WHERE id = ? AND state = 0",
                true,
            ),
        };
        // `sent_at` of a failed delivery is when it ended; the answer shows it only for sent ones.
        let (time, error) = match outcome {
            Ok(()) => (now, String::new()),
            Err((e, Some(at))) => (at, cut_chars(e, ERROR_CHARS)),
            Err((e, None)) => (now, cut_chars(e, ERROR_CHARS)),
        };
        let q = self.sql(sql);
        sqlx::query(&q)
            .bind(time)
            .bind(error)
            .bind(id)
            .execute(&self.write)
            .await?;
        Ok(ended)
    }

    /// When no delivery of run `run_id` is pending any more, records on the run how they went
    /// (`alarm_status` 2 or 3, and which failed and why in `alarm_msg`); several admins
    /// finishing the last deliveries at once write the same result, and only one of them is
    /// answered `Some`: whether every delivery was sent.
    pub async fn settle_run_alarm(&self, run_id: i64) -> StoreResult<Option<bool>> {
        let all = self.deliveries_of_run_on(&self.write, run_id).await?;
        if all.is_empty() || all.iter().any(|d| d.state == DeliveryState::Pending) {
            return Ok(None);
        }
        let failed: Vec<String> = all
            .iter()
            .filter(|d| d.state == DeliveryState::Failed)
            .map(|d| match d.attempts {
                0 | 1 => format!("{}: {}", d.channel, d.error),
                n => format!("{}: {} (after {n} attempts)", d.channel, d.error),
            })
            .collect();
        let status = if failed.is_empty() {
            alarm_status::SENT
        } else {
            alarm_status::FAILED
        };
        let ended = self.finish_alarm(run_id, status, &failed.join("; ")).await?;
        Ok(ended.then_some(failed.is_empty()))
    }

    /// Every delivery of run `run_id`'s alarm, in the order they were stored.
    pub async fn run_alarm_deliveries(&self, run_id: i64) -> StoreResult<Vec<AlarmDelivery>> {
        self.deliveries_of_run_on(&self.read, run_id).await
    }

    async fn deliveries_of_run_on(&self, pool: &sqlx::AnyPool, run_id: i64) -> StoreResult<Vec<AlarmDelivery>> {
        let q = self.sql_text(format!(
            "SELECT {DELIVERY_COLUMNS} FROM alarm_delivery WHERE run_id = ? ORDER BY id"
        ));
        let all = sqlx::query(&q).bind(run_id).fetch_all(pool).await?;
        Ok(all.iter().map(delivery).collect::<Result<_, _>>()?)
    }

    /// Runs whose alarm is claimed (-1) with no delivery pending: an admin that stopped
    /// between a delivery's end and the run's settling leaves them; at most `limit`.
    pub async fn unsettled_alarms(&self, limit: i64) -> StoreResult<Vec<i64>> {
        let q = self.sql(
            "SELECT DISTINCT d.run_id AS run_id FROM alarm_delivery d JOIN run r ON r.id = d.run_id \
             WHERE r.alarm_status = ? AND NOT EXISTS \
             (SELECT 1 FROM alarm_delivery p WHERE p.run_id = d.run_id AND p.state = 0) LIMIT ?",
        );
        let all = sqlx::query(&q)
            .bind(alarm_status::LOCKED)
            .bind(limit)
            .fetch_all(&self.read)
            .await?;
        Ok(all.iter().map(|r| rows::int(r, "run_id")).collect::<Result<_, _>>()?)
    }
}
