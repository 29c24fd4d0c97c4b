//! The outbox: sends the stored alarm deliveries that are due, each under a lease so one admin
//! at a time sends it, and records each attempt — sent, tried again after a pause that doubles
//! (`--alarm-retry-pause`, at most [`MAX_PAUSE`]), or given up after `--alarm-attempts`. When a
//! run's last delivery ends, the run's `alarm_status` says how its alarm went.
//!
//! It looks for due deliveries when the claim loop stored new ones, when a retry's pause ends,
//! and every [`POLL`] besides (deliveries of another admin that stopped, leases run out).

use super::deliver::{Sender, Target};
use super::digest::{Digest, MOST_PER_DIGEST};
use super::message::{log_tail, Alarm, AlarmText, EventAlarm};
use super::Secrets;
use crate::api::alarm_policy::AlarmLanguage;
use crate::dispatch::client::{ExecutorClient, Target as ExecutorTarget};
use crate::model::AlarmEvent;
use crate::store::{LeasedDelivery, Store};
use chime_protocol::LogParam;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

/// How often due deliveries are looked for without a wake-up.
const POLL: Duration = Duration::from_secs(1);
/// Longest pause between two attempts.
const MAX_PAUSE: Duration = Duration::from_secs(300);
/// Deliveries sent at once.
const CONCURRENT_DELIVERIES: usize = 8;
/// Deliveries taken up per look.
const BATCH: i64 = 100;
/// How much longer than an attempt's time limit its lease lasts: an admin that stops while
/// sending leaves the delivery to others this long after the attempt would have ended.
const LEASE_MARGIN: Duration = Duration::from_secs(5);
/// How long after new deliveries were stored the outbox waits for more before it looks, when
/// digests are on.
const DIGEST_GATHER: Duration = Duration::from_millis(500);

/// How deliveries are retried and bounded (`--alarm-attempts`, `--alarm-retry-pause`,
/// `--alarm-timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retries {
    /// Attempts per delivery.
    pub attempts: u32,
    /// Pause before the second attempt.
    pub first_pause: Duration,
    /// Time limit of one attempt.
    pub timeout: Duration,
}

impl Retries {
    /// The pause after failed attempt number `attempt` (1 for the first).
    pub fn pause_after(&self, attempt: i64) -> Duration {
        let doublings = u32::try_from(attempt.saturating_sub(1)).unwrap_or(u32::MAX).min(20);
        self.first_pause.saturating_mul(1 << doublings).min(MAX_PAUSE)
    }

    fn lease(&self) -> Duration {
        // The sender bounds an attempt by its timeout plus a second.
        self.timeout + Duration::from_secs(1) + LEASE_MARGIN
    }
}

/// What the outbox works with.
pub(super) struct Outbox {
    pub store: Store,
    pub sender: Arc<Sender>,
    pub retries: Retries,
    pub public_url: Option<String>,
    /// `--alarm-language`: the language of alarms whose job names none.
    pub language: AlarmLanguage,
    /// Reads a failed run's log from its executor when the admin keeps no copy.
    pub client: ExecutorClient,
    /// The admin's own alarm secrets (SMTP URL and password, its webhook URL).
    pub admin_secrets: Vec<String>,
    pub shutdown: CancellationToken,
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Woken when deliveries were stored or a retry is due.
    pub wake: Arc<Notify>,
    /// `--alarm-digest-at`: this many deliveries due at once to one channel go as one
    /// digest; 0 never.
    pub digest_at: usize,
}

/// Sends due deliveries until shutdown.
pub(super) async fn run(outbox: Outbox) {
    let outbox = Arc::new(outbox);
    let permits = Arc::new(Semaphore::new(CONCURRENT_DELIVERIES));
    let mut sending = tokio::task::JoinSet::new();
    let mut poll = tokio::time::interval(POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut settle_sweep = tokio::time::interval(Duration::from_secs(60));
    loop {
        tokio::select! {
            _ = outbox.shutdown.cancelled() => break,
            _ = poll.tick() => {}
            _ = outbox.wake.notified() => {
                // Failures that come together reach the claim in several rounds: wait for the
                // rest, so that they can go as one digest.
                if outbox.digest_at > 0 {
                    tokio::time::sleep(DIGEST_GATHER).await;
                }
            }
            _ = settle_sweep.tick() => outbox.settle_left_over().await,
        }
        while sending.try_join_next().is_some() {}
        let due = match outbox.store.due_deliveries(crate::model::now_ms(), BATCH).await {
            Ok(due) => due,
            Err(e) => {
                tracing::warn!(error = %e, "looking for due alarm deliveries failed");
                continue;
            }
        };
        for batch in batches(due, outbox.digest_at) {
            let Ok(permit) = permits.clone().acquire_owned().await else {
                break;
            };
            let outbox = outbox.clone();
            sending.spawn(async move {
                let _permit = permit;
                match batch.as_slice() {
                    [id] => outbox.deliver(*id).await,
                    _ => outbox.deliver_digest(batch).await,
                }
            });
        }
    }
    // Attempts under way end with the shutdown: their leases run out and another start (or
    // another admin) sends them.
    sending.abort_all();
    while sending.join_next().await.is_some() {}
}

/// The due deliveries, each alone, but those of a named channel with `digest_at` or more due
/// (at most [`MOST_PER_DIGEST`] a batch) together.
fn batches(due: Vec<(i64, Option<i64>)>, digest_at: usize) -> Vec<Vec<i64>> {
    let mut by_channel: Vec<(i64, Vec<i64>)> = Vec::new();
    let mut out = Vec::new();
    for (id, channel) in due {
        match channel.filter(|_| digest_at > 1) {
            Some(c) => match by_channel.iter_mut().find(|(k, _)| *k == c) {
                Some((_, ids)) => ids.push(id),
                None => by_channel.push((c, vec![id])),
            },
            None => out.push(vec![id]),
        }
    }
    for (_, ids) in by_channel {
        if ids.len() >= digest_at {
            out.extend(ids.chunks(MOST_PER_DIGEST).map(<[i64]>::to_vec));
        } else {
            out.extend(ids.into_iter().map(|id| vec![id]));
        }
    }
    out
}

impl Outbox {
    /// Takes delivery `id`'s lease and makes one attempt, if no other admin has it.
    async fn deliver(&self, id: i64) {
        let Some(leased) = self.lease(id).await else {
            return;
        };
        let outcome = self.attempt(&leased).await;
        self.record(&leased, outcome).await;
    }

    /// Takes the leases of `ids` (one channel's) and tells those it got in one digest; each
    /// records the digest's outcome. A delivery whose alarm cannot be read fails alone.
    async fn deliver_digest(&self, ids: Vec<i64>) {
        let mut told = Vec::new();
        let mut parts = Vec::new();
        for id in ids {
            let Some(leased) = self.lease(id).await else {
                continue;
            };
            match self.message(&leased).await {
                Ok(part) => {
                    told.push(leased);
                    parts.push(part);
                }
                Err(failed) => self.record(&leased, Err(failed)).await,
            }
        }
        let Some(first) = told.first() else {
            return;
        };
        let outcome = if parts.len() == 1 {
            self.send(first, parts[0].as_ref()).await
        } else {
            let digest = Digest::new(parts, self.public_url.as_deref(), self.language);
            self.metrics.alarm_digests.inc();
            tracing::info!(channel = %first.channel, alarms = told.len(), "alarms told in one digest");
            self.send(first, &digest).await
        };
        for leased in &told {
            self.record(leased, outcome.clone()).await;
        }
    }

    /// Takes delivery `id`'s lease and counts the attempt; `None` when another admin has it or
    /// it ended.
    async fn lease(&self, id: i64) -> Option<LeasedDelivery> {
        let now = crate::model::now_ms();
        let lease_ms = i64::try_from(self.retries.lease().as_millis()).unwrap_or(i64::MAX);
        match self.store.lease_delivery(id, now, lease_ms).await {
            Ok(leased) => leased,
            Err(e) => {
                tracing::warn!(delivery = id, error = %e, "taking an alarm delivery failed");
                None
            }
        }
    }

    /// Records how an attempt of `leased` went: sent, to be tried again after a pause, or
    /// given up; and settles its run's alarm when it was the run's last delivery.
    async fn record(&self, leased: &LeasedDelivery, outcome: Result<(), (String, bool)>) {
        let id = leased.id;
        let kind = leased.kind.as_str();
        let recorded = match outcome {
            Ok(()) => {
                self.metrics.alarm_delivery(kind, "sent");
                tracing::info!(run_id = leased.run_id, alarm_event = leased.event_id, channel = %leased.channel, "alarm delivered");
                self.store.record_attempt(id, Ok(())).await
            }
            Err((why, permanent)) => {
                let last = permanent || leased.attempts >= i64::from(self.retries.attempts);
                let retry_at = (!last).then(|| {
                    let pause = self.retries.pause_after(leased.attempts);
                    self.wake_after(pause);
                    crate::model::now_ms() + i64::try_from(pause.as_millis()).unwrap_or(i64::MAX)
                });
                self.metrics
                    .alarm_delivery(kind, if last { "failed" } else { "retried" });
                if last {
                    tracing::error!(run_id = leased.run_id, alarm_event = leased.event_id, channel = %leased.channel, attempts = leased.attempts, error = %why, "alarm delivery failed; giving up");
                } else {
                    tracing::warn!(run_id = leased.run_id, alarm_event = leased.event_id, channel = %leased.channel, attempt = leased.attempts, error = %why, "alarm delivery failed; trying again");
                }
                self.store.record_attempt(id, Err((&why, retry_at))).await
            }
        };
        match recorded {
            // An alarm no run raised has no run to record it on: its deliveries say it all.
            Ok(true) if leased.run_id > 0 => self.settle(leased.run_id).await,
            Ok(_) => {}
            // The lease runs out and the delivery is tried again: at worst sent twice.
            Err(e) => tracing::warn!(delivery = id, error = %e, "recording an alarm delivery failed"),
        }
    }

    /// The end of the alarmed run's log: the admin's stored copy (groups that keep logs), else
    /// its executor's, as the console reads it; empty when neither can be read. Each attempt
    /// reads it again, so a retry carries a log that arrived after the first attempt; the
    /// executor call is bounded by the client's timeout.
    async fn read_log_tail(&self, alarm: &Alarm) -> String {
        let run = &alarm.run;
        if let Ok(Some(stored)) = self.store.stored_run_log(run.id).await {
            return log_tail(&stored.content);
        }
        let Some(group) = alarm.group.as_ref().filter(|_| !run.executor_address.is_empty()) else {
            return String::new();
        };
        let param = LogParam {
            log_date_tim: run.triggered_at,
            log_id: run.id,
            from_line_num: 1,
        };
        let reply = self
            .client
            .log(ExecutorTarget::of(group, &run.executor_address), &param)
            .await;
        match reply.content {
            Some(page) if reply.is_success() => log_tail(&page.log_content),
            _ => String::new(),
        }
    }

    /// One attempt; the error (without secrets) and whether it is final whatever the count.
    async fn attempt(&self, leased: &LeasedDelivery) -> Result<(), (String, bool)> {
        let alarm = self.message(leased).await?;
        self.send(leased, alarm.as_ref()).await
    }

    /// Sends `alarm` once to `leased`'s receiver.
    async fn send(&self, leased: &LeasedDelivery, alarm: &dyn AlarmText) -> Result<(), (String, bool)> {
        let (target, mut secrets) = match leased.channel_id {
            None if leased.channel == super::CONTACTS => (Target::Contacts, Vec::new()),
            None => (Target::AdminWebhook, Vec::new()),
            Some(channel_id) => match self.store.alarm_channel(channel_id).await {
                Ok(c) => {
                    let secrets = super::secrets_of_channel(&c.draft);
                    (Target::Channel(c.draft), secrets)
                }
                Err(crate::store::StoreError::NotFound(_)) => {
                    return Err((format!("the channel '{}' no longer exists", leased.channel), true));
                }
                Err(e) => return Err((format!("the channel could not be read: {e}"), false)),
            },
        };
        secrets.extend(self.admin_secrets.iter().cloned());
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        let secrets = Secrets(secrets);
        self.sender
            .send_once(&target, alarm)
            .await
            .map_err(|f| (secrets.scrub(&f.message), f.permanent))
    }

    /// What `leased` tells: its run's alarm as the run is now, or the alarm event as stored.
    async fn message(&self, leased: &LeasedDelivery) -> Result<Box<dyn AlarmText>, (String, bool)> {
        if leased.event_id > 0 {
            let entry = match self.store.alarm_event(leased.event_id).await {
                Ok(e) => e,
                Err(crate::store::StoreError::NotFound(_)) => {
                    return Err(("the alarm event no longer exists".to_owned(), true));
                }
                Err(e) => return Err((format!("the alarm event could not be read: {e}"), false)),
            };
            return Ok(Box::new(EventAlarm::new(entry, self.public_url.as_deref())));
        }
        let mut alarm = Alarm::load(&self.store, leased.run_id, leased.event)
            .await
            .map_err(|e| (format!("the run could not be read: {e}"), false))?;
        alarm.lang = alarm.job_language().unwrap_or(self.language);
        if matches!(leased.event, AlarmEvent::Failed | AlarmEvent::Slow) {
            alarm.log_tail = self.read_log_tail(&alarm).await;
        }
        alarm.link = self
            .public_url
            .as_ref()
            .map(|base| format!("{base}/#/runs/{}", leased.run_id));
        Ok(Box::new(alarm))
    }

    /// Records on run `run_id` how its alarm went, once no delivery is pending.
    async fn settle(&self, run_id: i64) {
        match self.store.settle_run_alarm(run_id).await {
            Ok(Some(sent)) => self.metrics.alarm(sent),
            Ok(None) => {}
            Err(e) => tracing::warn!(run_id, error = %e, "recording the alarm status failed"),
        }
    }

    /// Settles the runs an admin left claimed after their last delivery ended (it stopped in
    /// between).
    async fn settle_left_over(&self) {
        match self.store.unsettled_alarms(100).await {
            Ok(runs) => {
                for run_id in runs {
                    self.settle(run_id).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "looking for unsettled alarms failed"),
        }
    }

    /// Wakes the outbox when `pause` has passed (a retry falls due).
    fn wake_after(&self, pause: Duration) {
        let wake = self.wake.clone();
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(pause) => wake.notify_one(),
                _ = shutdown.cancelled() => {}
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_up_to_the_cap() {
        let r = Retries {
            attempts: 10,
            first_pause: Duration::from_millis(500),
            timeout: Duration::from_secs(10),
        };
        assert_eq!(r.pause_after(1), Duration::from_millis(500));
        assert_eq!(r.pause_after(3), Duration::from_secs(2));
        assert_eq!(r.pause_after(40), MAX_PAUSE);
    }
}
