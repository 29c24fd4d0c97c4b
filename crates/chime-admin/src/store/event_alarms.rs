//! Alarms no run raised (`alarm_event`): a workflow instance that failed, a group left without
//! a live executor, and its return. Each is stored with its deliveries (`alarm_delivery` rows
//! with `event_id` set and `run_id` 0) in one transaction that also claims it, so it is stored
//! once however many admins look: a failed instance's by the event's unique `claim_key`, a
//! group's outage by its `alarm_group_incident` row (opened once, closed once).

use super::alarm_deliveries::{DeliveryOf, NewDelivery};
use super::bulk::Arg;
use super::rows;
use super::{Store, StoreResult};
use crate::api::alarm_events::{AlarmEventEntry, AlarmFact};
use crate::model::{cut_chars, now_ms, AlarmDelivery, AlarmEvent};
use sqlx::any::AnyRow;
use sqlx::{Any, Transaction};

/// Longest title and note kept, in characters (the columns' size).
const LINE_CHARS: usize = 500;

/// An alarm to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAlarmEvent {
    /// What it tells.
    pub event: AlarmEvent,
    /// The workflow instance's or the group's id.
    pub subject: i64,
    /// Unique among all alarm events: the claim.
    pub claim_key: String,
    /// The message's title.
    pub title: String,
    /// The message's lines.
    pub facts: Vec<AlarmFact>,
    /// The console's page of the subject, relative to the public URL.
    pub link: String,
    /// Why nothing is sent (a silence window), or empty.
    pub note: String,
}

/// A group without a live executor whose outage was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupIncident {
    /// The group.
    pub group_id: i64,
    /// The `no_executor` alarm that opened it.
    pub event_id: i64,
    /// Whether that alarm had deliveries (its return is told only then).
    pub alarmed: bool,
    /// When it was opened, epoch ms.
    pub opened_at: i64,
}

const EVENT_COLUMNS: &str = "id, event, subject, title, facts, link, note, created_at";

fn event_row(row: &AnyRow) -> Result<AlarmEventEntry, sqlx::Error> {
    Ok(AlarmEventEntry {
        id: rows::int(row, "id")?,
        event: AlarmEvent::parse(&rows::text(row, "event")?),
        subject: rows::int(row, "subject")?,
        title: rows::text(row, "title")?,
        // Written by this module as JSON; a row that does not read shows no lines.
        facts: serde_json::from_str(&rows::text(row, "facts")?).unwrap_or_default(),
        link: rows::text(row, "link")?,
        note: rows::text(row, "note")?,
        created_at: rows::int(row, "created_at")?,
        deliveries: Vec::new(),
    })
}

fn delivery_row(row: &AnyRow) -> Result<(i64, AlarmDelivery), sqlx::Error> {
    Ok((rows::int(row, "event_id")?, super::alarm_deliveries::delivery(row)?))
}

impl Store {
    /// Stores `alarm` with its `deliveries` unless an alarm with its claim key is stored
    /// already (by this admin or another); the new event's id when this call stored it.
    pub async fn claim_alarm_event(
        &self,
        alarm: &NewAlarmEvent,
        deliveries: &[NewDelivery],
    ) -> StoreResult<Option<i64>> {
        let mut tx = self.write.begin().await?;
        let Some(id) = self.insert_alarm_event(&mut tx, alarm, deliveries).await? else {
            return Ok(None);
        };
        tx.commit().await?;
        Ok(Some(id))
    }

    /// Inserts `alarm` with its `deliveries` in `tx` unless its claim key is taken; its id when
    /// inserted.
    async fn insert_alarm_event(
        &self,
        tx: &mut Transaction<'static, Any>,
        alarm: &NewAlarmEvent,
        deliveries: &[NewDelivery],
    ) -> StoreResult<Option<i64>> {
        let facts = serde_json::to_string(&alarm.facts).unwrap_or_else(|_| "[]".to_owned());
        let (title, note) = (cut_chars(&alarm.title, LINE_CHARS), cut_chars(&alarm.note, LINE_CHARS));
        let won = self
            .claim_row(
                tx,
                "alarm_event (event, subject, claim_key, title, facts, link, note, created_at)",
                &[
                    Arg::Text(alarm.event.as_str()),
                    Arg::Int(alarm.subject),
                    Arg::Text(&alarm.claim_key),
                    Arg::Text(&title),
                    Arg::Text(&facts),
                    Arg::Text(&alarm.link),
                    Arg::Text(&note),
                    Arg::Int(now_ms()),
                ],
            )
            .await?;
        if !won {
            return Ok(None);
        }
        let q = self.sql("SELECT id FROM alarm_event WHERE claim_key = ?");
        let row = sqlx::query(&q).bind(&alarm.claim_key).fetch_one(&mut **tx).await?;
        let id = rows::int(&row, "id")?;
        self.insert_deliveries(tx, DeliveryOf::Event(id), deliveries, alarm.event, now_ms())
            .await?;
        Ok(Some(id))
    }

    /// Instances that ended failed at or after `since`, of workflows that name alarm channels,
    /// whose alarm is not stored yet; at most `limit`, oldest first.
    pub async fn failed_instances_to_alarm(&self, since: i64, limit: i64) -> StoreResult<Vec<i64>> {
        let q = self.sql(
            "SELECT i.id AS id FROM workflow_instance i WHERE i.state = 'failed' AND i.finished_at >= ? \
             AND i.workflow_id IN (SELECT w.id FROM workflow w WHERE w.alarm_channels <> '') \
             AND NOT EXISTS (SELECT 1 FROM alarm_event e WHERE e.event = ? AND e.subject = i.id) \
             ORDER BY i.id LIMIT ?",
        );
        let found = sqlx::query(&q)
            .bind(since)
            .bind(AlarmEvent::WorkflowFailed.as_str())
            .bind(limit)
            .fetch_all(&self.read)
            .await?;
        Ok(found.iter().map(|r| rows::int(r, "id")).collect::<Result<_, _>>()?)
    }

    /// Groups that have enabled (scheduled) jobs, with how many.
    pub async fn groups_with_enabled_jobs(&self) -> StoreResult<Vec<(i64, i64)>> {
        let q = "SELECT group_id, COUNT(*) AS jobs FROM job WHERE running = 1 GROUP BY group_id";
        let all = sqlx::query(q).fetch_all(&self.read).await?;
        all.iter()
            .map(|r| Ok((rows::int(r, "group_id")?, rows::int(r, "jobs")?)))
            .collect()
    }

    /// The open incidents of groups without a live executor.
    pub async fn group_incidents(&self) -> StoreResult<Vec<GroupIncident>> {
        let q = "SELECT group_id, event_id, alarmed, opened_at FROM alarm_group_incident";
        let all = sqlx::query(q).fetch_all(&self.write).await?;
        all.iter()
            .map(|r| {
                Ok(GroupIncident {
                    group_id: rows::int(r, "group_id")?,
                    event_id: rows::int(r, "event_id")?,
                    alarmed: rows::int(r, "alarmed")? != 0,
                    opened_at: rows::int(r, "opened_at")?,
                })
            })
            .collect()
    }

    /// Opens group `alarm.subject`'s incident and stores its `no_executor` alarm with
    /// `deliveries`, in one transaction; the event's id, or `None` when an incident is open
    /// already (another admin opened it).
    pub async fn open_group_incident(
        &self,
        alarm: &NewAlarmEvent,
        deliveries: &[NewDelivery],
    ) -> StoreResult<Option<i64>> {
        let mut tx = self.write.begin().await?;
        // The event id is set below, once the event is stored.
        let opened = self
            .claim_row(
                &mut tx,
                "alarm_group_incident (group_id, event_id, alarmed, opened_at)",
                &[
                    Arg::Int(alarm.subject),
                    Arg::Int(0),
                    Arg::Int(i64::from(!deliveries.is_empty())),
                    Arg::Int(now_ms()),
                ],
            )
            .await?;
        if !opened {
            return Ok(None);
        }
        let Some(id) = self.insert_alarm_event(&mut tx, alarm, deliveries).await? else {
            return Ok(None);
        };
        let q = self.sql("UPDATE alarm_group_incident SET event_id = ? WHERE group_id = ?");
        sqlx::query(&q).bind(id).bind(alarm.subject).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(Some(id))
    }

    /// Closes `incident` and, with `alarm`, stores its `executor_back` alarm with `deliveries`,
    /// in one transaction; false when another admin closed it first.
    pub async fn close_group_incident(
        &self,
        incident: GroupIncident,
        alarm: Option<&NewAlarmEvent>,
        deliveries: &[NewDelivery],
    ) -> StoreResult<bool> {
        let delete = "DELETE FROM alarm_group_incident WHERE group_id = ? AND opened_at = ?";
        let Some(mut tx) = self
            .close_incident(delete, [incident.group_id, incident.opened_at])
            .await?
        else {
            return Ok(false);
        };
        if let Some(alarm) = alarm {
            self.insert_alarm_event(&mut tx, alarm, deliveries).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Alarm event `id` as stored, without its deliveries (the outbox's message).
    pub async fn alarm_event(&self, id: i64) -> StoreResult<AlarmEventEntry> {
        let q = self
            .sql(&format!("SELECT {EVENT_COLUMNS} FROM alarm_event WHERE id = ?"))
            .into_owned();
        let mut conn = self.write.acquire().await?;
        self.row_by_id(&mut conn, &q, id, "alarm event", event_row).await
    }

    /// Alarm events, newest first, each with its deliveries: those of `event` when given, with
    /// an id below `before_id` when given; at most `limit`.
    pub async fn alarm_events(
        &self,
        event: Option<AlarmEvent>,
        subject: Option<i64>,
        before_id: Option<i64>,
        limit: i64,
    ) -> StoreResult<Vec<AlarmEventEntry>> {
        let q = self
            .sql(&format!(
                "SELECT {EVENT_COLUMNS} FROM alarm_event WHERE id < ? AND (? = '' OR event = ?) \
                 AND (? = 0 OR subject = ?) ORDER BY id DESC LIMIT ?"
            ))
            .into_owned();
        let kind = event.map(AlarmEvent::as_str).unwrap_or("");
        let subject = subject.unwrap_or(0);
        let found = sqlx::query(&q)
            .bind(before_id.unwrap_or(i64::MAX))
            .bind(kind)
            .bind(kind)
            .bind(subject)
            .bind(subject)
            .bind(limit)
            .fetch_all(&self.read)
            .await?;
        let mut events: Vec<AlarmEventEntry> = found.iter().map(event_row).collect::<Result<_, _>>()?;
        let ids: Vec<i64> = events.iter().map(|e| e.id).collect();
        let deliveries: Vec<(i64, AlarmDelivery)> = self
            .read_in_as(
                "SELECT id, run_id, event_id, channel, kind, event, state, attempts, error, created_at, sent_at \
                 FROM alarm_delivery WHERE event_id IN ({in}) ORDER BY id",
                &ids,
                &[] as &[Arg<'_>],
                delivery_row,
            )
            .await?;
        for (event_id, d) in deliveries {
            if let Some(e) = events.iter_mut().find(|e| e.id == event_id) {
                e.deliveries.push(d);
            }
        }
        Ok(events)
    }
}
