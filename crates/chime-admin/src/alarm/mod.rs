//! Alarms: when a run fails for good — it could not be sent or it failed, and no retry was
//! made (no retries left, killed, or lost on its last attempt) — its alarm goes to the job's
//! channels (or, when the job names none, its group's: [`crate::model::AlarmChannel`]), to
//! the job's e-mail contacts (`--smtp-url`) and to the admin's webhook (`--alarm-webhook`).
//!
//! The results writer hands the ids of failed runs over after each commit
//! ([`crate::pipeline::alarm_queue`]); this never waits, so a slow receiver cannot hold up
//! recording results. The alarm task claims each run's alarm with a guarded `UPDATE` of its
//! `alarm_status` (0 → -1, see [`crate::store::alarm_status`]) and stores one delivery per
//! receiver in the same transaction, so every alarm is claimed once even with several admins,
//! and nothing is sent that was not stored first. The outbox ([`outbox`]) then sends the
//! deliveries, each under a lease, with retries, and records 2 (sent) or 3 (a delivery failed)
//! on the run, or 1 when there was nobody to tell. A sweep at start and every few minutes
//! claims failures whose notification was lost because an admin stopped between the commit
//! and the claim.

mod channels;
pub mod deliver;
mod digest;
mod events;
mod message;
mod outbox;

pub use crate::api::alarm_channels::check_template;
pub use deliver::{check_mailbox, check_smtp_url, check_webhook_url};
pub use message::{escape_html, Alarm, AlarmText, EventAlarm};

use crate::api::alarm_policy::AlarmPolicy;
use crate::model::{AlarmEvent, ChannelKind};
use crate::store::{AlarmClaim, NewDelivery, Store, StoredSilence};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;

/// How often unclaimed failures are looked for (besides at start).
const SWEEP_EVERY: Duration = Duration::from_secs(300);
/// How often jobs with an alarmed failure are looked at for a success since (`on_recovery`):
/// one query over the open incidents, which are few.
const RECOVERY_EVERY: Duration = Duration::from_secs(5);
/// The sweep looks at failures created this recently; older ones are left alone.
const SWEEP_WINDOW_MS: i64 = 24 * 3600 * 1000;

/// The name a delivery to the job's e-mail contacts is shown under (XXL-JOB's one channel).
pub const CONTACTS: &str = "e-mail";
/// The name a delivery to `--alarm-webhook` is shown under.
pub const ADMIN_WEBHOOK: &str = "webhook";

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
    /// How deliveries are retried and bounded.
    pub(crate) retries: outbox::Retries,
    /// `--public-url`: alarms link to the run there.
    pub(crate) public_url: Option<String>,
    /// `--alarm-language`.
    pub(crate) language: crate::api::alarm_policy::AlarmLanguage,
    /// `--alarm-digest-at`.
    pub(crate) digest_at: usize,
    /// Reads the log of an alarmed run from its executor (the alarm's `log_tail`).
    pub(crate) client: crate::dispatch::client::ExecutorClient,
    /// Cancelled to stop.
    pub(crate) shutdown: CancellationToken,
    /// Where sent and failed alarms are counted (`chime_alarms_total`).
    pub(crate) metrics: Arc<crate::metrics::Metrics>,
    /// Which groups have a live executor (`no_executor`, `executor_back`).
    pub(crate) directory: Arc<crate::registry::Directory>,
}

pub use outbox::Retries;

/// Builds the sender of a channel's test message, from the admin's settings.
pub(crate) fn test_sender(config: &crate::AdminConfig) -> Result<deliver::Sender, String> {
    deliver::Sender::new(deliver::Channels {
        smtp_url: config.smtp_url.as_deref(),
        from: &config.alarm_from,
        webhook: config.alarm_webhook.as_deref(),
        timeout: config.alarm_timeout,
    })
}

/// Sends a made-up alarm to `channel` once, now, without storing anything: a channel's "send
/// test". The error holds no URL or secret.
pub async fn send_test(config: &crate::AdminConfig, channel: &crate::model::ChannelDraft) -> Result<(), String> {
    let sender = test_sender(config)?;
    let mut alarm = Alarm::sample(config.public_url.as_deref());
    alarm.lang = config.alarm_language;
    let target = deliver::Target::Channel(channel.clone());
    sender
        .send_once(&target, &alarm)
        .await
        .map_err(|f| Secrets(secrets_of_channel(channel)).scrub(&f.message))
}

/// Runs the alarm task until shutdown.
pub async fn run(alarm: AlarmLoop, mut rx: mpsc::UnboundedReceiver<Vec<i64>>) {
    let channels = deliver::Channels {
        smtp_url: alarm.smtp_url.as_deref(),
        from: &alarm.from,
        webhook: alarm.webhook.as_deref(),
        timeout: alarm.retries.timeout,
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
    let wake = Arc::new(Notify::new());
    let outbox = tokio::spawn(outbox::run(outbox::Outbox {
        store: alarm.store.clone(),
        sender: sender.clone(),
        retries: alarm.retries,
        public_url: alarm.public_url.clone(),
        language: alarm.language,
        client: alarm.client.clone(),
        digest_at: alarm.digest_at,
        admin_secrets: Secrets::of(&alarm).0,
        shutdown: alarm.shutdown.clone(),
        metrics: alarm.metrics.clone(),
        wake: wake.clone(),
    }));
    let mut sweep = tokio::time::interval(SWEEP_EVERY);
    let mut recovery = tokio::time::interval(RECOVERY_EVERY);
    recovery.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let ids = tokio::select! {
            _ = alarm.shutdown.cancelled() => break,
            _ = recovery.tick() => {
                if look_for_events(&alarm, &sender).await {
                    wake.notify_one();
                }
                continue;
            }
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
        if claim_all(&alarm, &sender, ids).await {
            wake.notify_one();
        }
    }
    let _ = outbox.await;
}

/// Looks for what raises an alarm with no failed run: recovered jobs, late or slow runs,
/// failed workflow instances, groups without executors. True when a delivery was stored.
async fn look_for_events(alarm: &AlarmLoop, sender: &deliver::Sender) -> bool {
    let looks = [
        (
            recoveries(&alarm.store, sender).await,
            "looking for recovered jobs failed",
        ),
        (
            late_and_slow(&alarm.store, sender).await,
            "looking for late or slow runs failed",
        ),
        (
            events::failed_workflows(&alarm.store).await,
            "looking for failed workflow instances failed",
        ),
        (
            events::group_executors(&alarm.store, &alarm.directory).await,
            "looking for groups without executors failed",
        ),
    ];
    let mut stored = false;
    for (look, failed) in looks {
        match look {
            Ok(found) => stored |= found,
            Err(e) => tracing::warn!(error = %e, "{failed}"),
        }
    }
    stored
}

/// Claims the alarms of the failed runs `ids`. True when a delivery was stored.
async fn claim_all(alarm: &AlarmLoop, sender: &deliver::Sender, ids: Vec<i64>) -> bool {
    let mut stored = false;
    for run_id in ids {
        match claim(&alarm.store, sender, run_id).await {
            Ok(AlarmClaim::Stored(n)) => {
                tracing::info!(run_id, deliveries = n, "alarm claimed");
                stored = true;
            }
            Ok(AlarmClaim::Silenced) => {
                tracing::info!(run_id, "alarm silenced by a silence window");
                alarm.metrics.alarms_silenced.inc();
            }
            Ok(AlarmClaim::RateLimited) => {
                tracing::info!(run_id, "alarm rate-limited by the job's policy");
                alarm.metrics.alarms_rate_limited.inc();
            }
            Ok(_) => {}
            // Left at alarm_status 0: the next sweep tries again.
            Err(e) => tracing::warn!(run_id, error = %e, "claiming an alarm failed"),
        }
    }
    stored
}

/// Claims run `run_id`'s alarm, if it is due and no other admin has it, with one delivery per
/// receiver: the job's channels (or its group's), its e-mail contacts, the admin's webhook.
/// While a silence window covers the run's job or group, the claim records instead that no
/// alarm is needed and which window silenced it, and stores no delivery; a job whose policy
/// waits for more failures in a row records why on the run instead too.
async fn claim(store: &Store, sender: &deliver::Sender, run_id: i64) -> crate::store::StoreResult<AlarmClaim> {
    let alarm = Alarm::load(store, run_id, AlarmEvent::Failed).await?;
    let (job_id, group_id) = (alarm.run.job_id, alarm.run.group_id);
    let now = crate::model::now_ms();
    let covering = store.silences_covering(job_id, group_id, now).await?;
    if let Some(msg) = silenced(&covering, alarm.group.as_ref(), now) {
        return Ok(if store.claim_alarm_not_needed(run_id, &msg).await? {
            AlarmClaim::Silenced
        } else {
            AlarmClaim::NotOurs
        });
    }
    let policy = policy_of(alarm.job.as_ref());
    if policy.after_failures > 1 {
        let streak = store.failure_streak(job_id, run_id).await?;
        if !policy.alarms_at(streak) {
            let why = format!(
                "failure {streak} in a row; the job's alarm policy alarms at every {} (after_failures)",
                policy.after_failures
            );
            store.claim_alarm_not_needed(run_id, &why).await?;
            return Ok(AlarmClaim::NobodyToTell);
        }
    }
    if let Some(every) = policy.at_most_every {
        let since = now - i64::try_from(every.as_millis()).unwrap_or(i64::MAX);
        if let Some(last) = store.last_failure_alarm(job_id, since).await? {
            let why = format!(
                "rate-limited: the job's failure was alarmed with run {last} less than {} ago (at_most_every)",
                humantime::format_duration(every)
            );
            return Ok(if store.claim_alarm_not_needed(run_id, &why).await? {
                AlarmClaim::RateLimited
            } else {
                AlarmClaim::NotOurs
            });
        }
    }
    let deliveries = receivers(store, sender, &alarm).await?;
    store
        .claim_alarm(run_id, &deliveries, policy.on_recovery.then_some(job_id))
        .await
}

/// The policy of `job` (the default for a deleted job, or a stored text that no longer reads).
fn policy_of(job: Option<&crate::model::Job>) -> AlarmPolicy {
    job.and_then(|j| AlarmPolicy::parse(&j.info.alarm_policy).ok())
        .unwrap_or_default()
}

/// One delivery per receiver of `alarm`: the job's channels (or its group's), its e-mail
/// contacts, the admin's webhook.
async fn receivers(
    store: &Store,
    sender: &deliver::Sender,
    alarm: &Alarm,
) -> crate::store::StoreResult<Vec<NewDelivery>> {
    let named = alarm
        .job
        .as_ref()
        .map(|j| j.info.alarm_channels.as_str())
        .filter(|c| !c.is_empty())
        .or(alarm.group.as_ref().map(|g| g.alarm_channels.as_str()))
        .unwrap_or("");
    let mut deliveries = channel_deliveries(store, named).await?;
    if !deliver::contacts(alarm).is_empty() {
        deliveries.push(NewDelivery {
            channel_id: None,
            channel: CONTACTS.to_owned(),
            kind: ChannelKind::Email,
        });
    }
    if sender.has_admin_webhook() {
        deliveries.push(NewDelivery {
            channel_id: None,
            channel: ADMIN_WEBHOOK.to_owned(),
            kind: ChannelKind::Webhook,
        });
    }
    Ok(deliveries)
}

/// One delivery per channel named in `list` (`a,b`), in its order.
async fn channel_deliveries(store: &Store, list: &str) -> crate::store::StoreResult<Vec<NewDelivery>> {
    let names: Vec<&str> = crate::api::alarm_channels::names_of(list).collect();
    let found = store.alarm_channels_named(&names).await?;
    let mut deliveries = Vec::new();
    for name in names {
        match found.get(name) {
            Some(c) => deliveries.push(NewDelivery {
                channel_id: Some(c.id),
                channel: name.to_owned(),
                kind: c.draft.kind,
            }),
            // Channels in use cannot be deleted or renamed, so this is a race with a change.
            None => tracing::warn!(channel = name, "alarm channel not found; skipped"),
        }
    }
    Ok(deliveries)
}

/// Stores the recoveries that are due: for each job whose alarmed failure has been followed
/// by a success, the incident is closed and the success is told to the same receivers, once
/// across several admins. Answers whether any delivery was stored.
async fn recoveries(store: &Store, sender: &deliver::Sender) -> crate::store::StoreResult<bool> {
    let mut stored = false;
    for due in store.recovered_incidents().await? {
        let alarm = Alarm::load(store, due.ok_run, AlarmEvent::Recovered).await?;
        let deliveries = receivers(store, sender, &alarm).await?;
        if store.claim_recovery(due, &deliveries).await? && !deliveries.is_empty() {
            tracing::info!(job_id = due.job_id, run_id = due.ok_run, "recovery claimed");
            stored = true;
        }
    }
    Ok(stored)
}

/// How far back the looks for late and slow runs go, by scheduled time: a run that waits or
/// runs longer than this is the lost-run sweep's.
const TIMING_WINDOW_MS: i64 = 2 * 24 * 3600 * 1000;

/// Stores the alarms of runs that wait or run longer than their job's policy allows
/// (`late_after`, `longer_than`), once per run and event. Answers whether any delivery was
/// stored.
async fn late_and_slow(store: &Store, sender: &deliver::Sender) -> crate::store::StoreResult<bool> {
    let policies = store.timed_alarm_policies().await?;
    if policies.is_empty() {
        return Ok(false);
    }
    let now = crate::model::now_ms();
    let Some(from_id) = store.first_run_scheduled_since(now - TIMING_WINDOW_MS).await? else {
        return Ok(false);
    };
    let mut stored = false;
    for (job_id, text) in policies {
        let Ok(policy) = AlarmPolicy::parse(&text) else {
            continue;
        };
        let watched = [
            (AlarmEvent::Late, policy.late_after),
            (AlarmEvent::Slow, policy.longer_than),
        ];
        for (event, wait) in watched {
            let Some(wait) = wait else { continue };
            let wait_ms = i64::try_from(wait.as_millis()).unwrap_or(i64::MAX);
            for run_id in store.runs_raising(event, job_id, from_id, now, wait_ms).await? {
                let alarm = Alarm::load(store, run_id, event).await?;
                let deliveries = receivers(store, sender, &alarm).await?;
                if store.claim_run_event(run_id, event, &deliveries).await? && !deliveries.is_empty() {
                    tracing::info!(job_id, run_id, event = event.as_str(), "alarm claimed");
                    stored = true;
                }
            }
        }
    }
    Ok(stored)
}

/// What a run's `alarm_msg` says when one of `covering` (silences of its job and its group)
/// is in force at `now`: the first by id, its name, what it covers and when it ends, in its
/// zone (`silenced by window 7 'db upgrade' (group orders) until 2026-11-29 10:00:00 UTC`);
/// `None` when none is. `group` is the run's, for its name.
fn silenced(covering: &[StoredSilence], group: Option<&crate::model::Group>, now: i64) -> Option<String> {
    covering.iter().find_map(|s| {
        let until = match s.draft.window() {
            Ok(w) => w.in_force(now)?,
            // Checked when it was stored; a window that cannot be read silences nothing.
            Err(e) => {
                tracing::warn!(silence = s.id, error = %e, "silence window unreadable; ignored");
                return None;
            }
        };
        let name = if s.draft.name.is_empty() {
            String::new()
        } else {
            format!(" '{}'", s.draft.name)
        };
        let covers = match group {
            _ if s.draft.job_id > 0 => format!("job {}", s.draft.job_id),
            Some(g) if g.id == s.draft.group_id => format!("group {}", g.app_name),
            _ => format!("group {}", s.draft.group_id),
        };
        Some(format!(
            "silenced by window {}{name} ({covers}) until {}",
            s.id,
            crate::silence::wall_time(until, &s.draft.time_zone)
        ))
    })
}

/// The secrets of one channel: its whole URL (chat webhooks carry their key in it) and its
/// signing secret.
fn secrets_of_channel(channel: &crate::model::ChannelDraft) -> Vec<String> {
    let mut found = vec![channel.url.clone(), channel.secret.clone()];
    if let Ok(url) = reqwest::Url::parse(&channel.url) {
        found.extend(url.query().map(str::to_owned));
        found.push(url.path().to_owned());
    }
    found.retain(|s| s.len() > 1);
    found.sort_by_key(|s| std::cmp::Reverse(s.len()));
    found
}

/// The secrets of the alarm settings, kept out of what is stored on a run: the SMTP URL (and
/// its password on its own) and the webhook URL (chat webhooks carry their key in the path).
#[derive(Debug, Default)]
pub(crate) struct Secrets(pub(crate) Vec<String>);

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
    pub(crate) fn scrub(&self, text: &str) -> String {
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
