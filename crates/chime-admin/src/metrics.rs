//! Prometheus metrics served at `/metrics`.

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Label of per-trigger-type counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TriggerLabel {
    /// CRON, MANUAL, RETRY, …
    pub trigger_type: String,
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
    /// Claim rounds put off because results waited to be written (the database is behind).
    pub claims_deferred: Counter,
    /// Trigger results and run results waiting for the results writer (updated when scraped).
    pub results_backlog: Gauge,
    /// Seconds from a run's scheduled time to the moment it is sent.
    pub lateness: Histogram,
    /// Runs claimed but not yet sent (updated when scraped).
    pub pending_runs: Gauge,
    /// Runs sent and waiting for their result (updated when scraped).
    pub running_runs: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Creates and registers every metric.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("chime");
        let fires = Family::<TriggerLabel, Counter>::default();
        let dispatch_failures = Counter::default();
        let callbacks = Counter::default();
        let claimed = Counter::default();
        let misfires_skipped = Counter::default();
        let claims_deferred = Counter::default();
        let results_backlog = Gauge::default();
        let lateness = Histogram::new([
            0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
        ]);
        let pending_runs = Gauge::default();
        let running_runs = Gauge::default();
        registry.register("fires", "Runs sent to an executor, by trigger type", fires.clone());
        registry.register(
            "dispatch_failures",
            "Runs whose sending to an executor failed",
            dispatch_failures.clone(),
        );
        registry.register("callbacks", "Run results received from executors", callbacks.clone());
        registry.register(
            "claimed_fires",
            "Scheduled fires claimed into run rows",
            claimed.clone(),
        );
        registry.register(
            "misfires_skipped",
            "Missed fires recorded as skipped by the misfire policy",
            misfires_skipped.clone(),
        );
        registry.register(
            "claims_deferred",
            "Claim rounds put off because the results writer was behind",
            claims_deferred.clone(),
        );
        registry.register(
            "results_backlog",
            "Trigger and run results waiting to be written",
            results_backlog.clone(),
        );
        registry.register(
            "dispatch_lateness_seconds",
            "Time from a run's scheduled time to its sending",
            lateness.clone(),
        );
        registry.register("pending_runs", "Runs claimed and not yet sent", pending_runs.clone());
        registry.register(
            "running_runs",
            "Runs sent and waiting for a result",
            running_runs.clone(),
        );
        Metrics {
            registry,
            fires,
            dispatch_failures,
            callbacks,
            claimed,
            misfires_skipped,
            claims_deferred,
            results_backlog,
            lateness,
            pending_runs,
            running_runs,
        }
    }

    /// Counts a fire of this trigger type.
    pub fn fired(&self, trigger_type: chime_protocol::TriggerType) {
        self.fires
            .get_or_create(&TriggerLabel {
                trigger_type: trigger_type.as_str().to_owned(),
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
