//! Alarms: when a run fails for good — it could not be sent or it failed, and no retry was
//! made (no retries left, killed, or lost on its last attempt) — the job's alarm contacts get
//! an e-mail (`--smtp-url`) and the admin's webhook (`--alarm-webhook`) gets a JSON POST.
//!
//! The results writer hands the ids of failed runs over after each commit
//! ([`after_commit`]); this never waits, so a slow mail server cannot hold up recording
//! results. The alarm task claims each alarm with a guarded `UPDATE` of the run's
//! `alarm_status` (0 → -1, see [`crate::store::alarm_status`]), so every alarm is sent once
//! even with several admins, and records 2 (sent), 3 (every attempt failed) or 1 (nobody to
//! tell), XXL-JOB's values, and why an alarm failed in the run's `alarm_msg` (without URLs or
//! passwords). A job with e-mail contacts but no SMTP server configured fails its alarm with
//! that reason, logged too. A sweep at start and every few minutes claims failures whose notification was lost
//! because an admin stopped between the commit and the claim.

pub mod deliver;
mod message;

pub use deliver::{check_mailbox, check_smtp_url, check_webhook_url};
pub use message::{escape_html, Alarm};

use crate::store::{alarm_status, Store};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;

/// How often unclaimed failures are looked for (besides at start).
const SWEEP_EVERY: Duration = Duration::from_secs(300);
/// The sweep looks at failures created this recently; older ones are left alone.
const SWEEP_WINDOW_MS: i64 = 24 * 3600 * 1000;
/// Alarms delivered at once.
const CONCURRENT_DELIVERIES: usize = 8;

/// What the alarm task works with.
#[derive(Debug)]
pub struct AlarmLoop {
    /// Where alarms are claimed and their runs read.
    pub(crate) store: Store,
    /// `--smtp-url`.
    pub(crate) smtp_url: Option<String>,
    /// `--alarm-from`.
    pub(crate) from: String,
    /// `--alarm-webhook`.
    pub(crate) webhook: Option<String>,
    /// Cancelled to stop.
    pub(crate) shutdown: CancellationToken,
    /// Where sent and failed alarms are counted (`chime_alarms_total`).
    pub(crate) metrics: Arc<crate::metrics::Metrics>,
}

/// Runs the alarm task until shutdown.
pub async fn run(alarm: AlarmLoop, mut rx: mpsc::UnboundedReceiver<Vec<i64>>) {
    let channels = deliver::Channels {
        smtp_url: alarm.smtp_url.as_deref(),
        from: &alarm.from,
        webhook: alarm.webhook.as_deref(),
    };
    let sender = match deliver::Sender::new(channels) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            // Settings are checked at start, so this is unexpected; without a sender every
            // failure would be marked as needing no alarm, so leave them unclaimed instead.
            tracing::error!(error = %e, "alarms disabled");
            return;
        }
    };
    let secrets = Arc::new(Secrets::of(&alarm));
    let permits = Arc::new(Semaphore::new(CONCURRENT_DELIVERIES));
    let mut deliveries = tokio::task::JoinSet::new();
    let mut sweep = tokio::time::interval(SWEEP_EVERY);
    loop {
        let ids = tokio::select! {
            _ = alarm.shutdown.cancelled() => break,
            _ = sweep.tick() => {
                let since = crate::model::now_ms() - SWEEP_WINDOW_MS;
                match alarm.store.unclaimed_alarms(since, 1000).await {
                    Ok(ids) => ids,
                    Err(e) => {
                        tracing::warn!(error = %e, "looking for unclaimed alarms failed");
                        continue;
                    }
                }
            }
            got = rx.recv() => match got {
                Some(mut ids) => {
                    while let Ok(more) = rx.try_recv() {
                        ids.extend(more);
                    }
                    ids
                }
                None => break,
            },
        };
        while deliveries.try_join_next().is_some() {}
        if ids.is_empty() {
            continue;
        }
        let claimed = match alarm.store.claim_alarms(&ids).await {
            Ok(c) => c,
            Err(e) => {
                // Left at alarm_status 0: the next sweep tries again.
                tracing::warn!(error = %e, runs = ids.len(), "claiming alarms failed");
                continue;
            }
        };
        for run_id in claimed {
            let (store, shutdown, secrets) = (alarm.store.clone(), alarm.shutdown.clone(), secrets.clone());
            let (sender, permits, metrics) = (sender.clone(), permits.clone(), alarm.metrics.clone());
            deliveries.spawn(async move {
                let Ok(_permit) = permits.acquire_owned().await else {
                    return;
                };
                let (status, why) = tokio::select! {
                    s = deliver_one(&store, &sender, run_id) => s,
                    // Stopping: give the alarm back so the next start (or another admin) sends it.
                    _ = shutdown.cancelled() => (alarm_status::NONE, String::new()),
                };
                if status == alarm_status::SENT || status == alarm_status::FAILED {
                    metrics.alarm(status == alarm_status::SENT);
                }
                let why = secrets.scrub(&why);
                if let Err(e) = store.finish_alarm(run_id, status, &why).await {
                    tracing::warn!(run_id, error = %e, "recording the alarm status failed");
                }
            });
        }
    }
    while deliveries.join_next().await.is_some() {}
}

/// Sends one claimed alarm and returns the run's new `alarm_status`, with why it was not
/// delivered (empty when it was).
async fn deliver_one(store: &Store, sender: &deliver::Sender, run_id: i64) -> (i64, String) {
    let run = match store.run(run_id).await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(run_id, error = %e, "loading the failed run for its alarm failed");
            return (
                alarm_status::FAILED,
                "the run could not be read from the database".to_owned(),
            );
        }
    };
    let job = store.job(run.job_id).await.ok();
    let group = store.group(run.group_id).await.ok();
    let alarm = Alarm { run, job, group };
    let outcome = sender.send(&alarm).await;
    if outcome.attempted == 0 {
        return (alarm_status::NOT_NEEDED, String::new());
    }
    if outcome.failed == 0 {
        tracing::info!(run_id, job_id = alarm.run.job_id, "alarm sent");
        (alarm_status::SENT, String::new())
    } else {
        (alarm_status::FAILED, outcome.problems.join("; "))
    }
}

/// The secrets of the alarm settings, kept out of what is stored on a run: the SMTP URL (and
/// its password on its own) and the webhook URL (chat webhooks carry their key in the path).
#[derive(Debug, Default)]
struct Secrets(Vec<String>);

impl Secrets {
    fn of(alarm: &AlarmLoop) -> Secrets {
        let mut found = Vec::new();
        if let Some(url) = &alarm.smtp_url {
            found.push(url.clone());
            if let Some(password) = reqwest::Url::parse(url)
                .ok()
                .and_then(|u| u.password().map(str::to_owned))
            {
                found.push(password);
            }
        }
        found.extend(alarm.webhook.iter().cloned());
        // Longest first, so a password inside a URL does not break up the URL's removal.
        found.sort_by_key(|s| std::cmp::Reverse(s.len()));
        found.retain(|s| !s.is_empty());
        Secrets(found)
    }

    /// `text` with every secret replaced by `***`.
    fn scrub(&self, text: &str) -> String {
        self.0.iter().fold(text.to_owned(), |t, s| t.replace(s.as_str(), "***"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_scrubbed() {
        let secrets = Secrets(vec![
            "smtps://u:p4ss@mail.example.com:465".into(),
            "https://chat.example.com/hook/KEY".into(),
            "p4ss".into(),
        ]);
        let got = secrets.scrub("smtps://u:p4ss@mail.example.com:465 refused p4ss; https://chat.example.com/hook/KEY");
        assert_eq!(got, "*** refused ***; ***");
    }
}
