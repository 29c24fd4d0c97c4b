//! The outbox: sends the stored alarm deliveries that are due, each under a lease so one admin
//! at a time sends it, and records each attempt — sent, tried again after a pause that doubles
//! (`--alarm-retry-pause`, at most [`MAX_PAUSE`]), or given up after `--alarm-attempts`. When a
//! run's last delivery ends, the run's `alarm_status` says how its alarm went.
//!
//! It looks for due deliveries when the claim loop stored new ones, when a retry's pause ends,
//! and every [`POLL`] besides (deliveries of another admin that stopped, leases run out).

use super::deliver::{Sender, Target};
use super::message::{Alarm, AlarmText, EventAlarm};
use super::Secrets;
use crate::store::{LeasedDelivery, Store};
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
    /// The admin's own alarm secrets (SMTP URL and password, its webhook URL).
    pub admin_secrets: Vec<String>,
    pub shutdown: CancellationToken,
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Woken when deliveries were stored or a retry is due.
    pub wake: Arc<Notify>,
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
            _ = outbox.wake.notified() => {}
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
        for id in due {
            let Ok(permit) = permits.clone().acquire_owned().await else {
                break;
            };
            let outbox = outbox.clone();
            sending.spawn(async move {
                let _permit = permit;
                outbox.deliver(id).await;
            });
        }
    }
    // Attempts under way end with the shutdown: their leases run out and another start (or
    // another admin) sends them.
    sending.abort_all();
    while sending.join_next().await.is_some() {}
}

impl Outbox {
    /// Takes delivery `id`'s lease and makes one attempt, if no other admin has it.
    async fn deliver(&self, id: i64) {
        let now = crate::model::now_ms();
        let lease_ms = i64::try_from(self.retries.lease().as_millis()).unwrap_or(i64::MAX);
        let leased = match self.store.lease_delivery(id, now, lease_ms).await {
            Ok(Some(d)) => d,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(delivery = id, error = %e, "taking an alarm delivery failed");
                return;
            }
        };
        let outcome = self.attempt(&leased).await;
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

    /// One attempt; the error (without secrets) and whether it is final whatever the count.
    async fn attempt(&self, leased: &LeasedDelivery) -> Result<(), (String, bool)> {
        let alarm = self.message(leased).await?;
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
            .send_once(&target, alarm.as_ref())
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
