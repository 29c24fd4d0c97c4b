//! Prometheus metrics served at `/metrics`.

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Metric, Registry};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Label of per-trigger-type counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TriggerLabel {
    /// CRON, MANUAL, RETRY, …
    pub trigger_type: String,
}

/// Label of workflow instance metrics: the instance's state.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    /// `queued`, `running`, `succeeded`, `failed`, `stopped` or `skipped`.
    pub state: String,
}

/// Label of flow control's metrics: the limit's name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LimitLabel {
    /// A concurrency key, `group:<app_name>` or `executor:<address>`.
    pub limit: String,
}

/// Label of the alarm counter: what became of an alarm.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    /// `sent` or `failed`.
    pub outcome: String,
}

/// Labels of the alarm delivery counter: the channel's kind and what became of an attempt.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DeliveryLabel {
    /// `email`, `webhook`, `slack`, `teams`, `dingtalk`, `feishu` or `wecom`.
    pub kind: String,
    /// `sent`, `retried` (failed, tried again later) or `failed` (failed for good).
    pub outcome: String,
}

/// Label of the refused-request counter: the executor API endpoint.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EndpointLabel {
    /// `registry`, `registryRemove`, `callback`, or `other` (any other path: the path is the
    /// caller's choice and must not create label values).
    pub endpoint: String,
}

/// How long one warning about refused executor requests speaks for one (endpoint, address).
const REFUSAL_LOG_WINDOW: Duration = Duration::from_secs(60);
/// (endpoint, address) pairs remembered by the refusal warnings' limiter. An attacker with many
/// addresses (an IPv6 network) cannot grow it past this; beyond it, one shared entry per
/// endpoint limits the warnings for every address not remembered.
const REFUSAL_LOG_KEYS: usize = 10_000;

/// One (endpoint, address)'s current window: when its warning was written, and the refusals
/// not written since.
#[derive(Debug, Clone, Copy)]
struct RefusalWindow {
    since: Instant,
    suppressed: u64,
}

/// The limiter behind [`Metrics::executor_refused`].
#[derive(Debug, Default)]
struct RefusalLog {
    by_peer: HashMap<(&'static str, IpAddr), RefusalWindow>,
    /// Shared per-endpoint windows for addresses that did not fit in `by_peer`.
    overflow: HashMap<&'static str, RefusalWindow>,
    /// When `by_peer` was last cleared of ended windows (at most once a second: a full table of
    /// live windows is not scanned on every refusal).
    pruned: Option<Instant>,
}

/// What to say in the warning about a refused executor request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefusalWarning {
    /// Refusals of the same kind not written since the last warning.
    pub suppressed: u64,
    /// False when the admin remembers too many addresses already: the warning then speaks for
    /// every address not remembered, and its count too.
    pub per_peer: bool,
}

/// Starts a window at `now` when `w`'s has ended; returns the warning to write, if any.
fn open_window(w: &mut RefusalWindow, now: Instant, per_peer: bool) -> Option<RefusalWarning> {
    if now.saturating_duration_since(w.since) < REFUSAL_LOG_WINDOW {
        w.suppressed = w.suppressed.saturating_add(1);
        return None;
    }
    let suppressed = std::mem::take(&mut w.suppressed);
    w.since = now;
    Some(RefusalWarning { suppressed, per_peer })
}

impl RefusalLog {
    fn admit(&mut self, endpoint: &'static str, ip: IpAddr, now: Instant) -> Option<RefusalWarning> {
        if let Some(w) = self.by_peer.get_mut(&(endpoint, ip)) {
            return open_window(w, now, true);
        }
        if self.by_peer.len() >= REFUSAL_LOG_KEYS
            && self
                .pruned
                .is_none_or(|t| now.saturating_duration_since(t) >= Duration::from_secs(1))
        {
            self.pruned = Some(now);
            // A pair whose window ended gets a fresh one on its next refusal anyway; its
            // suppressed count (already in the counter) is all that is lost.
            self.by_peer
                .retain(|_, w| now.saturating_duration_since(w.since) < REFUSAL_LOG_WINDOW);
        }
        if self.by_peer.len() < REFUSAL_LOG_KEYS {
            self.by_peer.insert(
                (endpoint, ip),
                RefusalWindow {
                    since: now,
                    suppressed: 0,
                },
            );
            return Some(RefusalWarning {
                suppressed: 0,
                per_peer: true,
            });
        }
        match self.overflow.get_mut(endpoint) {
            Some(w) => open_window(w, now, false),
            None => {
                self.overflow.insert(
                    endpoint,
                    RefusalWindow {
                        since: now,
                        suppressed: 0,
                    },
                );
                Some(RefusalWarning {
                    suppressed: 0,
                    per_peer: false,
                })
            }
        }
    }
}

/// The admin's counters and histograms.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Runs sent to an executor, by trigger type.
    pub fires: Family<TriggerLabel, Counter>,
    /// Runs whose sending failed (no address, executor refused, network).
    pub dispatch_failures: Counter,
    /// Results received through `/api/callback`.
    pub callbacks: Counter,
    /// Fires claimed into run rows.
    pub claimed: Counter,
    /// Missed fires recorded as skipped.
    pub misfires_skipped: Counter,
    /// Runs the lost-run sweep failed: their executor vanished or forgot them.
    pub runs_lost: Counter,
    /// Claim rounds put off because results waited to be written (the database is behind).
    pub claims_deferred: Counter,
    /// Trigger results and run results waiting for the results writer (updated when scraped).
    pub results_backlog: Gauge,
    /// Seconds from a run's scheduled time to the moment it is sent.
    pub lateness: Histogram,
    /// Runs claimed but not yet sent (updated when scraped).
    pub pending_runs: Gauge,
    /// Executors linked to this admin (holding a WebSocket to it).
    pub linked_executors: Gauge,
    /// Bytes of unfinished large messages held for all links (`http/link_socket.rs`).
    pub link_message_bytes: Gauge,
    /// Runs sent and waiting for their result (updated when scraped).
    pub running_runs: Gauge,
    /// Executor API requests refused for their access token, by endpoint.
    pub executor_refused: Family<EndpointLabel, Counter>,
    /// Workflow instances by state (updated by the workflow loop every few seconds).
    pub workflow_instances: Family<StateLabel, Gauge>,
    /// Seconds from a node's run result to the workflow step that took it up (and started
    /// the nodes after it).
    pub workflow_node_lateness: Histogram,
    /// Alarms of failed runs, by outcome: `sent`, or `failed` (some channel refused it after
    /// its retries). Runs that needed no alarm are not counted.
    pub alarms: Family<OutcomeLabel, Counter>,
    /// Attempts to deliver an alarm, by channel kind and outcome.
    pub alarm_deliveries: Family<DeliveryLabel, Counter>,
    /// Alarms of failed runs not sent because a silence window covered the run's job or group.
    pub alarms_silenced: Counter,
    /// Alarms of failed runs not sent because the job's `at_most_every` had not passed since
    /// its last failure alarm.
    pub alarms_rate_limited: Counter,
    /// Digests sent: messages that told several alarms due at once to one channel.
    pub alarm_digests: Counter,
    /// Runs holding a slot of each limit (updated by the queue's loop each round).
    pub limit_running: Family<LimitLabel, Gauge>,
    /// Runs waiting in the queue on each limit (likewise).
    pub limit_queued: Family<LimitLabel, Gauge>,
    /// Seconds a run waited in the queue before it left to be sent.
    pub queue_wait: Histogram,
    /// Queued runs ended without being sent: past their limit's queue timeout, or skipped as
    /// misfires.
    pub queue_ended: Counter,
    refusal_log: Mutex<RefusalLog>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

/// Buckets of the lateness histograms, seconds.
const LATENESS_BUCKETS: [f64; 13] = [
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// `metric`, registered in `registry` as `chime_{name}` with `help`.
fn registered<M: Metric + Clone>(registry: &mut Registry, name: &str, help: &str, metric: M) -> M {
    registry.register(name, help, metric.clone());
    metric
}

/// [`Metrics`] from a table of its metrics: each field with the name it is registered under
/// (after `chime_`), the metric and its help, registered in the table's order (the order
/// `/metrics` lists them).
macro_rules! metrics_table {
    ($registry:ident; $($field:ident = $name:literal, $metric:expr, $help:literal;)*) => {
        Metrics {
            $($field: registered(&mut $registry, $name, $help, $metric),)*
            registry: $registry,
            refusal_log: Mutex::new(RefusalLog::default()),
        }
    };
}

impl Metrics {
    /// Creates and registers every metric.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("chime");
        metrics_table! { registry;
            alarms = "alarms", Family::<OutcomeLabel, Counter>::default(),
                "Alarms of failed runs by outcome: sent, or failed on some channel after its retries";
            alarm_deliveries = "alarm_deliveries", Family::<DeliveryLabel, Counter>::default(),
                "Attempts to deliver an alarm by channel kind and outcome: sent, retried, failed";
            alarms_silenced = "alarms_silenced", Counter::default(),
                "Alarms of failed runs not sent because a silence window covered the run's job or group";
            alarms_rate_limited = "alarms_rate_limited", Counter::default(),
                "Alarms of failed runs not sent because the job's at_most_every had not passed since its last failure alarm";
            alarm_digests = "alarm_digests", Counter::default(),
                "Digests sent: messages that told several alarms due at once to one channel";
            limit_running = "limit_running", Family::<LimitLabel, Gauge>::default(),
                "Runs holding a slot of each limit";
            limit_queued = "limit_queued", Family::<LimitLabel, Gauge>::default(),
                "Runs waiting in the queue on each limit";
            queue_wait = "queue_wait_seconds", Histogram::new([0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0]),
                "Time a run waited in the queue for a slot before it left to be sent";
            queue_ended = "queue_ended", Counter::default(),
                "Queued runs ended without being sent: past their limit's queue timeout, or skipped as misfires";
            workflow_instances = "workflow_instances", Family::<StateLabel, Gauge>::default(),
                "Workflow instances by state";
            workflow_node_lateness = "workflow_node_lateness_seconds", Histogram::new(LATENESS_BUCKETS),
                "Time from a workflow node's run result to the step that moved its instance on";
            fires = "fires", Family::<TriggerLabel, Counter>::default(),
                "Runs sent to an executor, by trigger type";
            dispatch_failures = "dispatch_failures", Counter::default(),
                "Runs whose sending to an executor failed";
            callbacks = "callbacks", Counter::default(),
                "Run results received from executors";
            claimed = "claimed_fires", Counter::default(),
                "Scheduled fires claimed into run rows";
            misfires_skipped = "misfires_skipped", Counter::default(),
                "Missed fires recorded as skipped by the misfire policy";
            runs_lost = "runs_lost", Counter::default(),
                "Runs failed by the lost-run sweep: their executor vanished, restarted or forgot them";
            claims_deferred = "claims_deferred", Counter::default(),
                "Claim rounds put off because the results writer was behind";
            results_backlog = "results_backlog", Gauge::default(),
                "Trigger and run results waiting to be written";
            lateness = "dispatch_lateness_seconds", Histogram::new(LATENESS_BUCKETS),
                "Time from a run's scheduled time to its sending";
            pending_runs = "pending_runs", Gauge::default(),
                "Runs claimed and not yet sent";
            linked_executors = "linked_executors", Gauge::default(),
                "Executors linked to this admin (holding a WebSocket to it)";
            link_message_bytes = "link_message_bytes", Gauge::default(),
                "Bytes of unfinished large messages held for executor links, beyond 64 KiB per link (budget 64 MiB)";
            running_runs = "running_runs", Gauge::default(),
                "Runs sent and waiting for a result";
            executor_refused = "executor_requests_refused", Family::<EndpointLabel, Counter>::default(),
                "Executor API requests (registrations, callbacks) refused for a wrong access token";
        }
    }

    /// Counts an executor API request to `endpoint` from `peer` refused for its access token,
    /// and says whether to write a warning about it: at most one per (endpoint, address) per
    /// minute, carrying the number of refusals not written since. `endpoint` must be one of a
    /// fixed set of names (it becomes a label value).
    pub fn executor_refused(&self, endpoint: &'static str, peer: IpAddr) -> Option<RefusalWarning> {
        self.executor_refused
            .get_or_create(&EndpointLabel {
                endpoint: endpoint.to_owned(),
            })
            .inc();
        self.refusal_log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .admit(endpoint, peer, Instant::now())
    }

    /// Counts a fire of this trigger type.
    pub fn fired(&self, trigger_type: chime_protocol::TriggerType) {
        self.fires
            .get_or_create(&TriggerLabel {
                trigger_type: trigger_type.as_str().to_owned(),
            })
            .inc();
    }

    /// Counts an alarm delivered (`sent` true) or not.
    pub fn alarm(&self, sent: bool) {
        let outcome = if sent { "sent" } else { "failed" };
        self.alarms
            .get_or_create(&OutcomeLabel {
                outcome: outcome.to_owned(),
            })
            .inc();
    }

    /// Counts an attempt to deliver an alarm on a channel of `kind` (`sent`, `retried` or
    /// `failed`).
    pub fn alarm_delivery(&self, kind: &str, outcome: &'static str) {
        self.alarm_deliveries
            .get_or_create(&DeliveryLabel {
                kind: kind.to_owned(),
                outcome: outcome.to_owned(),
            })
            .inc();
    }

    /// The text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn ip(n: u32) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(n))
    }

    #[test]
    fn one_warning_per_endpoint_and_address_per_window_with_the_count_left_out() {
        let mut log = RefusalLog::default();
        let t0 = Instant::now();
        let first = RefusalWarning {
            suppressed: 0,
            per_peer: true,
        };
        assert_eq!(log.admit("registry", ip(1), t0), Some(first));
        assert_eq!(log.admit("registry", ip(1), t0 + Duration::from_secs(1)), None);
        assert_eq!(log.admit("registry", ip(1), t0 + Duration::from_secs(59)), None);
        // Another endpoint or another address has its own window.
        assert_eq!(log.admit("callback", ip(1), t0), Some(first));
        assert_eq!(log.admit("registry", ip(2), t0), Some(first));
        assert_eq!(
            log.admit("registry", ip(1), t0 + REFUSAL_LOG_WINDOW),
            Some(RefusalWarning {
                suppressed: 2,
                per_peer: true
            })
        );
    }

    #[test]
    fn the_limiter_stays_bounded_whatever_the_number_of_addresses() {
        let mut log = RefusalLog::default();
        let t0 = Instant::now();
        let mut written = 0;
        for n in 0..(REFUSAL_LOG_KEYS as u32 * 3) {
            if log.admit("registry", ip(n), t0).is_some() {
                written += 1;
            }
        }
        assert_eq!(log.by_peer.len(), REFUSAL_LOG_KEYS);
        // One warning per remembered address, then one for all the others together.
        assert_eq!(written, REFUSAL_LOG_KEYS + 1);
        assert_eq!(
            log.admit("registry", ip(u32::MAX), t0 + REFUSAL_LOG_WINDOW),
            Some(RefusalWarning {
                suppressed: 0,
                per_peer: true
            }),
            "ended windows make room for new addresses"
        );
        assert_eq!(log.by_peer.len(), 1);
    }
}
