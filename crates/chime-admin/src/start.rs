//! Starting a scheduling center: database and migrations, the first user, partition leases,
//! recovery of pending runs, then every loop and the HTTP server. The one module that knows all
//! the others: nothing imports it but the crate root, so wiring never closes an import cycle.

use crate::alarm::AlarmLoop;
use crate::center::Admin;
use crate::config::AdminConfig;
use crate::dispatch::client::ExecutorClient;
use crate::dispatch::fence::SendFence;
use crate::dispatch::gate::Gate;
use crate::dispatch::route::Router;
use crate::dispatch::Dispatcher;
use crate::link::LinkHub;
use crate::metrics::Metrics;
use crate::monitor::possibly_sent::PossiblySentCheck;
use crate::monitor::Sweeper;
use crate::pipeline::alarm_queue::AlarmQueue;
use crate::pipeline::flow_limits::FlowLimits;
use crate::pipeline::partitions::Partitions;
use crate::pipeline::results_queue::ResultMsg;
use crate::pipeline::results_queue::ResultsQueue;
use crate::pipeline::run_ids::RunIds;
use crate::pipeline::wheel_queue::WheelQueue;
use crate::pipeline::workflow_wake::WorkflowWake;
use crate::registry::Directory;
use crate::results::WriterLoop;
use crate::retention::Retention;
use crate::schedule::backfill::BackfillLoop;
use crate::schedule::lease::{LeaseHolder, LeaseLoop};
use crate::schedule::queue::QueueLoop;
use crate::schedule::wheel::{WheelEntry, WheelLoop};
use crate::schedule::workflows::WorkflowLoop;
use crate::schedule::{ClaimLoop, MisfireRules, PossiblySent, Recovery, ToRecover};
use crate::store::{Backend, Store, StoreError, CLUSTER_SECRET, EXECUTOR_ACCESS_TOKEN};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Why the admin could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The configuration is unsafe or invalid.
    #[error("{0}")]
    Config(String),
    /// The database could not be opened or migrated.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// Address.
        addr: SocketAddr,
        /// Cause.
        source: std::io::Error,
    },
}

/// A running admin: its address, and a way to stop it.
#[derive(Debug)]
pub struct AdminHandle {
    /// Where the HTTP server listens.
    pub local_addr: SocketAddr,
    /// The executor access token this start made, when none was configured and the database
    /// held none yet: the one time it is handed out unasked (`chime admin` prints it; `chime
    /// admin show-token` reads it again from the database).
    pub new_access_token: Option<String>,
    /// The shared state (for in-process callers and tests).
    pub admin: Arc<Admin>,
    sweeper: Sweeper,
    retention: Retention,
    tasks: tokio::task::JoinSet<()>,
}

impl AdminHandle {
    /// What the lost-run sweep works with, to sweep by hand
    /// ([`crate::monitor::sweep_lost_runs`]).
    pub fn sweeper(&self) -> &Sweeper {
        &self.sweeper
    }

    /// What retention works with, to sweep by hand ([`crate::retention::sweep`]).
    pub fn retention(&self) -> &Retention {
        &self.retention
    }

    /// Stops the loops and the HTTP server and waits for them.
    pub async fn shutdown(mut self) {
        self.admin.shutdown.cancel();
        while self.tasks.join_next().await.is_some() {}
        self.admin.store.close().await;
    }

    /// Waits until the admin stops (after [`Admin::shutdown`] is cancelled, e.g. by a signal).
    pub async fn wait(mut self) {
        while self.tasks.join_next().await.is_some() {}
        self.admin.store.close().await;
    }
}

/// Starts the scheduling center: database and migrations, first user, partition leases,
/// recovery of pending runs, then the loops and the HTTP server.
pub async fn start(mut config: AdminConfig) -> Result<AdminHandle, StartError> {
    check_config(&config)?;
    let open_files = chime_serve::raise_descriptor_limit();
    tracing::info!(
        open_files,
        max_connections = config.serve_limits().connection_cap(),
        "limits on open files and connections"
    );
    let store = open_store(&config).await?;
    let secrets = kept_secrets(&mut config, &store).await?;
    let server_tls = config
        .server_tls()
        .map_err(|e| StartError::Config(format!("tls_cert: {e}")))?;
    let client_tls = config
        .client_tls()
        .map_err(|e| StartError::Config(format!("tls_ca: {e}")))?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| StartError::Bind {
            addr: config.listen,
            source,
        })?;
    let local_addr = listener.local_addr().map_err(|source| StartError::Bind {
        addr: config.listen,
        source,
    })?;

    let lease_store = store.lease_store(&config.db_url).await?;
    let (admin, loops) = wire(config, store, lease_store, local_addr, secrets.cluster, client_tls);
    admin.directory.refresh().await?;
    warn_of_tokenless_groups(&admin.store).await?;
    if secrets.new_access_token.is_some() {
        warn_of_upgrade_without_token(&admin.store).await?;
    }

    let mut tasks = tokio::task::JoinSet::new();
    let (sweeper, retention) = spawn_loops(&admin, loops, &mut tasks).await?;
    let shutdown = admin.shutdown.clone();
    let app = crate::http::router(admin.clone());
    let limits = admin.config.serve_limits();
    tasks.spawn(async move {
        chime_serve::serve_with(
            listener,
            app,
            limits,
            server_tls,
            async move { shutdown.cancelled().await },
        )
        .await;
    });
    tracing::info!(%local_addr, tls = admin.config.tls_cert.is_some(), db = %admin.store.backend().name(), node = %admin.config.node_id, "scheduling center started");
    Ok(AdminHandle {
        local_addr,
        new_access_token: secrets.new_access_token,
        admin,
        sweeper,
        retention,
        tasks,
    })
}

/// Each loop's parts and inbox, as [`wire`] builds them for [`start`]. Recovery and the lease
/// holder are used once before their loop starts; the two sweeps' parts stay with the
/// [`AdminHandle`] for sweeping by hand.
struct Loops {
    writer: WriterLoop,
    writer_inbox: mpsc::Receiver<ResultMsg>,
    wheel: WheelLoop,
    wheel_inbox: mpsc::UnboundedReceiver<WheelEntry>,
    holder: LeaseHolder,
    recovery: Recovery,
    claims: ClaimLoop,
    registry_refresh: Duration,
    sweeper: Sweeper,
    lost_sweep: Duration,
    /// Where runs are marked as being sent (not SQLite): the check of possibly sent runs.
    possibly_sent: Option<(PossiblySentCheck, mpsc::UnboundedReceiver<PossiblySent>)>,
    alarm: AlarmLoop,
    alarm_inbox: mpsc::UnboundedReceiver<Vec<i64>>,
    retention: Retention,
    workflows: WorkflowLoop,
    queue: QueueLoop,
    backfills: BackfillLoop,
}

/// Refuses settings that cannot work before anything is opened.
fn check_config(config: &AdminConfig) -> Result<(), StartError> {
    if let Some(cp) = &config.context_path {
        if !cp.starts_with('/') || cp.len() < 2 || cp.ends_with('/') || cp.contains("//") {
            return Err(StartError::Config(format!(
                "context path '{cp}' must look like /xxl-job-admin"
            )));
        }
    }
    if config.default_time_zone.parse::<chrono_tz::Tz>().is_err() {
        return Err(StartError::Config(format!(
            "unknown default time zone '{}'",
            config.default_time_zone
        )));
    }
    Ok(())
}

/// Connects to the database (migrating it) and makes the first console user if there is none.
async fn open_store(config: &AdminConfig) -> Result<Store, StartError> {
    let store = Store::connect(&config.db_url).await?;
    if config.admin_password.is_some() && store.count_users().await? > 0 {
        // The variable only chooses the first user's password; saying so spares an operator
        // who set it to regain access a silent failure at the login form.
        tracing::warn!(
            "CHIME_ADMIN_PASSWORD is ignored: console users already exist (it sets the password of \
             the first user only, at the first start); to set a password now run \
             `chime admin reset-password USER` with the same --db"
        );
    }
    crate::http::auth::ensure_first_user(&store, config.admin_password.as_deref()).await?;
    Ok(store)
}

/// Starts the loops (first balancing the leases and recovering the partitions acquired) on
/// `tasks`. Returns the parts the handle keeps.
async fn spawn_loops(
    admin: &Arc<Admin>,
    loops: Loops,
    tasks: &mut tokio::task::JoinSet<()>,
) -> Result<(Sweeper, Retention), StartError> {
    let Loops {
        writer,
        writer_inbox,
        wheel,
        wheel_inbox,
        holder,
        recovery,
        claims,
        registry_refresh,
        sweeper,
        lost_sweep,
        possibly_sent,
        alarm,
        alarm_inbox,
        retention,
        workflows,
        queue,
        backfills,
    } = loops;
    let shutdown = admin.shutdown.clone();
    tasks.spawn(crate::results::run(writer, writer_inbox));
    tasks.spawn(crate::schedule::wheel::run(wheel, wheel_inbox));
    if let Some((check, inbox)) = possibly_sent {
        tasks.spawn(crate::monitor::possibly_sent::run(check, inbox));
    }
    let first = crate::schedule::lease::balance(&holder, true).await?;
    // The first takeover is recovered before the admin is ready, as every later one is:
    // beside the lease rounds, which renew the leases however long it takes.
    let (to_recover, recover_inbox) = mpsc::unbounded_channel();
    tasks.spawn(crate::schedule::recover_takeovers(
        recovery,
        recover_inbox,
        shutdown.clone(),
    ));
    tasks.spawn(crate::schedule::lease::run(LeaseLoop {
        holder,
        to_recover: to_recover.clone(),
        shutdown: shutdown.clone(),
    }));
    let (done, recovered) = oneshot::channel();
    let _ = to_recover.send(ToRecover {
        takeover: first,
        done: Some(done),
    });
    drop(to_recover);
    if let Ok(result) = recovered.await {
        result?;
    }
    tasks.spawn(crate::schedule::run_claims(claims));
    tasks.spawn(crate::schedule::workflows::run(workflows));
    tasks.spawn(crate::schedule::queue::run(queue));
    tasks.spawn(crate::schedule::backfill::run(backfills));
    tasks.spawn(crate::monitor::run_registry_refresh(
        admin.directory.clone(),
        registry_refresh,
        shutdown.clone(),
    ));
    tasks.spawn(crate::monitor::run_lost_sweep(
        sweeper.clone(),
        lost_sweep,
        shutdown.clone(),
    ));
    tasks.spawn(crate::alarm::run(alarm, alarm_inbox));
    tasks.spawn(crate::retention::run(retention.clone(), shutdown.clone()));
    if admin.store.backend() == crate::store::Backend::Sqlite {
        tasks.spawn(run_wal_checkpoints(admin.store.clone(), shutdown.clone()));
    }
    Ok((sweeper, retention))
}

/// The secrets [`start`] found or made.
struct Secrets {
    /// The cluster secret (see [`crate::link::CLUSTER_SECRET_HEADER`]).
    cluster: String,
    /// The executor access token, if this start made it.
    new_access_token: Option<String>,
}

/// Sets the executor access token when none was configured — the one kept in the database,
/// made at the first start — and reads (or makes) the cluster secret. An admin never runs
/// without an executor token: anyone who reached it could otherwise register as an executor,
/// link, and have calls relayed to linked executors.
async fn kept_secrets(config: &mut AdminConfig, store: &Store) -> Result<Secrets, StoreError> {
    let mut new_access_token = None;
    if config.access_token.is_none() {
        let kept = store
            .kept_secret(EXECUTOR_ACCESS_TOKEN, crate::token::random_hex)
            .await?;
        if kept.created {
            // The token itself goes to the operator through `AdminHandle`, never to the log.
            tracing::warn!(
                "no --access-token was given: this admin made an executor access token and keeps it in its \
                 database; executors need it (`chime admin show-token` prints it)"
            );
            new_access_token = Some(kept.value.clone());
        }
        config.access_token = Some(kept.value);
    }
    let cluster = store.kept_secret(CLUSTER_SECRET, crate::token::random_hex).await?.value;
    Ok(Secrets {
        cluster,
        new_access_token,
    })
}

/// Warns of every group whose executors work without a token, at each start: it is an
/// operator's choice, and one nobody should forget was made.
async fn warn_of_tokenless_groups(store: &Store) -> Result<(), StoreError> {
    for group in store.list_groups().await?.iter().filter(|g| g.insecure_no_token) {
        tracing::warn!(
            app_name = %group.app_name,
            "group works WITHOUT an executor access token (insecure_no_token): anyone who can reach this admin \
             can register as its executor and receive its jobs; give its executors the admin's token and turn \
             insecure_no_token off"
        );
    }
    Ok(())
}

/// Says loudly what changes for a database that was used without an executor token and now has
/// one (made at this start): executors sending none are refused from now on.
async fn warn_of_upgrade_without_token(store: &Store) -> Result<(), StoreError> {
    let groups = store.list_groups().await?;
    if groups.is_empty() {
        return Ok(());
    }
    tracing::warn!(
        groups = groups.len(),
        "this database was used without an executor access token; from now on executors that send none are \
         REFUSED. Give each executor the token (`chime admin show-token`), or let a legacy group work without \
         one, on purpose: `chime group update APP --insecure-no-token`"
    );
    Ok(())
}

/// The parts the loops and the HTTP server share, made once by [`wire`].
struct Shared {
    config: AdminConfig,
    store: Store,
    shutdown: CancellationToken,
    links: Arc<LinkHub>,
    directory: Arc<Directory>,
    metrics: Arc<Metrics>,
    client: ExecutorClient,
    probe_gate: Arc<Gate>,
    partitions: Arc<Partitions>,
    inflight: Arc<RunIds>,
    killing: Arc<RunIds>,
    withdrawn: Arc<RunIds>,
    results: ResultsQueue,
    wheel: WheelQueue,
    rules: MisfireRules,
    workflow_wake: Arc<WorkflowWake>,
    flow: Arc<FlowLimits>,
    /// Runs are marked before they are sent where several admins may share the database.
    marks_runs: bool,
}

/// The receiving ends of the inboxes, each for its loop.
struct Inboxes {
    results: mpsc::Receiver<ResultMsg>,
    wheel: mpsc::UnboundedReceiver<WheelEntry>,
    alarms: mpsc::UnboundedReceiver<Vec<i64>>,
}

/// Makes the shared parts and the inboxes (the alarm queue's sending end goes to the results
/// writer alone).
fn shared_parts(
    config: AdminConfig,
    store: Store,
    cluster_secret: &str,
    client_tls: rustls::ClientConfig,
) -> (Shared, Inboxes, AlarmQueue) {
    let links = Arc::new(LinkHub::default());
    // Sends and probes each have `per_executor_concurrency` permits per executor.
    let client = ExecutorClient::new(
        config.executor_timeout,
        config.access_token.clone(),
        config.per_executor_concurrency.saturating_mul(2),
        config.executor_networks.clone(),
        links.clone(),
        Some(cluster_secret.to_owned()),
        client_tls,
    );
    let inflight = Arc::new(RunIds::default());
    let (results, results_rx) = ResultsQueue::new();
    let (wheel, wheel_rx) = WheelQueue::new(inflight.clone(), config.catch_up_rate);
    let (alarms, alarms_rx) = AlarmQueue::new();
    let shared = Shared {
        shutdown: CancellationToken::new(),
        directory: Arc::new(Directory::new(store.clone(), config.dead_timeout)),
        metrics: Arc::new(Metrics::new()),
        probe_gate: Arc::new(Gate::new(config.dispatch_concurrency, config.per_executor_concurrency)),
        partitions: Arc::new(Partitions::default()),
        killing: Arc::new(RunIds::default()),
        withdrawn: Arc::new(RunIds::default()),
        rules: MisfireRules::new(config.misfire_threshold, config.catch_up_max),
        workflow_wake: Arc::new(WorkflowWake::default()),
        flow: Arc::new(FlowLimits::default()),
        marks_runs: store.backend() != Backend::Sqlite,
        links,
        client,
        inflight,
        results,
        wheel,
        config,
        store,
    };
    let inboxes = Inboxes {
        results: results_rx,
        wheel: wheel_rx,
        alarms: alarms_rx,
    };
    (shared, inboxes, alarms)
}

/// Builds the parts the loops and the HTTP server share, and hands each what it uses.
fn wire(
    config: AdminConfig,
    store: Store,
    lease_store: Store,
    local_addr: SocketAddr,
    cluster_secret: String,
    client_tls: rustls::ClientConfig,
) -> (Arc<Admin>, Loops) {
    let (s, inboxes, alarms) = shared_parts(config, store, &cluster_secret, client_tls);
    let (possibly_sent_tx, possibly_sent) = possibly_sent_check(&s);
    let (holder, recovery) = lease_parts(&s, lease_store, local_addr, possibly_sent_tx);
    let loops = Loops {
        writer: writer_loop(&s, alarms),
        writer_inbox: inboxes.results,
        wheel: WheelLoop {
            dispatcher: dispatcher(&s),
            inflight: s.inflight.clone(),
            shutdown: s.shutdown.clone(),
        },
        wheel_inbox: inboxes.wheel,
        holder,
        recovery,
        workflows: workflow_loop(&s),
        queue: queue_loop(&s),
        backfills: BackfillLoop {
            store: s.store.clone(),
            partitions: s.partitions.clone(),
            wheel: s.wheel.clone(),
            workflows: s.workflow_wake.clone(),
            shutdown: s.shutdown.clone(),
        },
        claims: claim_loop(&s),
        registry_refresh: s.config.registry_refresh,
        sweeper: sweeper(&s),
        lost_sweep: s.config.lost_sweep,
        possibly_sent,
        alarm: AlarmLoop {
            store: s.store.clone(),
            smtp_url: s.config.smtp_url.clone(),
            from: s.config.alarm_from.clone(),
            webhook: s.config.alarm_webhook.clone(),
            retries: crate::alarm::Retries {
                attempts: s.config.alarm_attempts,
                first_pause: s.config.alarm_retry_pause,
                timeout: s.config.alarm_timeout,
            },
            public_url: s.config.public_url.clone(),
            language: s.config.alarm_language,
            client: s.client.clone(),
            digest_at: usize::try_from(s.config.alarm_digest_at).unwrap_or(usize::MAX),
            shutdown: s.shutdown.clone(),
            metrics: s.metrics.clone(),
            directory: s.directory.clone(),
        },
        alarm_inbox: inboxes.alarms,
        retention: Retention {
            store: s.store.clone(),
            run_days: s.config.run_retention_days,
            audit_days: s.config.audit_retention_days,
        },
    };
    (admin(s, cluster_secret), loops)
}

/// The check of possibly sent runs and recovery's way to it, where runs are marked before
/// they are sent (not SQLite).
fn possibly_sent_check(s: &Shared) -> PossiblySentParts {
    if !s.marks_runs {
        return (None, None);
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let check = PossiblySentCheck {
        store: s.store.clone(),
        directory: s.directory.clone(),
        client: s.client.clone(),
        probe_gate: s.probe_gate.clone(),
        partitions: s.partitions.clone(),
        wheel: s.wheel.clone(),
        wait: crate::monitor::possibly_sent::wait_after_recovery(s.config.executor_timeout),
        shutdown: s.shutdown.clone(),
    };
    (Some(tx), Some((check, rx)))
}

/// Recovery's sending end of the possibly-sent inbox, and the check with its receiving end.
type PossiblySentParts = (
    Option<mpsc::UnboundedSender<PossiblySent>>,
    Option<(PossiblySentCheck, mpsc::UnboundedReceiver<PossiblySent>)>,
);

fn dispatcher(s: &Shared) -> Arc<Dispatcher> {
    let c = &s.config;
    Arc::new(Dispatcher {
        store: s.store.clone(),
        directory: s.directory.clone(),
        metrics: s.metrics.clone(),
        client: s.client.clone(),
        router: Router::default(),
        gate: Gate::new(c.dispatch_concurrency, c.per_executor_concurrency),
        probe_gate: s.probe_gate.clone(),
        partitions: s.partitions.clone(),
        inflight: s.inflight.clone(),
        withdrawn: s.withdrawn.clone(),
        results: s.results.clone(),
        fence: s
            .marks_runs
            .then(|| SendFence::start(s.store.clone(), s.shutdown.clone())),
        node_id: c.node_id.clone(),
        flow: s.flow.clone(),
        shutdown: s.shutdown.clone(),
    })
}

fn writer_loop(s: &Shared, alarms: AlarmQueue) -> WriterLoop {
    WriterLoop {
        store: s.store.clone(),
        queue: s.results.clone(),
        inflight: s.inflight.clone(),
        killing: s.killing.clone(),
        withdrawn: s.withdrawn.clone(),
        wheel: s.wheel.clone(),
        alarms,
        executor_timeout: s.config.executor_timeout,
        workflows: s.workflow_wake.clone(),
        flow: s.flow.clone(),
        shutdown: s.shutdown.clone(),
    }
}

fn queue_loop(s: &Shared) -> QueueLoop {
    QueueLoop {
        store: s.store.clone(),
        flow: s.flow.clone(),
        partitions: s.partitions.clone(),
        inflight: s.inflight.clone(),
        wheel: s.wheel.clone(),
        tick: s.config.tick,
        results: s.results.clone(),
        misfire_threshold_ms: s.rules.threshold_ms,
        metrics: s.metrics.clone(),
        shutdown: s.shutdown.clone(),
    }
}

fn lease_parts(
    s: &Shared,
    lease_store: Store,
    local_addr: SocketAddr,
    possibly_sent: Option<mpsc::UnboundedSender<PossiblySent>>,
) -> (LeaseHolder, Recovery) {
    let holder = LeaseHolder {
        // Its own pool: a renewal never waits behind the partitions' work.
        store: lease_store,
        node_id: s.config.node_id.clone(),
        ttl: s.config.lease_ttl,
        partitions: s.partitions.clone(),
        url: s.config.advertised_url(local_addr),
        links: s.links.clone(),
    };
    let recovery = Recovery {
        store: s.store.clone(),
        partitions: s.partitions.clone(),
        inflight: s.inflight.clone(),
        wheel: s.wheel.clone(),
        rules: s.rules,
        metrics: s.metrics.clone(),
        possibly_sent,
    };
    (holder, recovery)
}

fn workflow_loop(s: &Shared) -> WorkflowLoop {
    WorkflowLoop {
        store: s.store.clone(),
        partitions: s.partitions.clone(),
        wheel: s.wheel.clone(),
        rules: s.rules,
        lookahead: s.config.lookahead,
        tick: s.config.tick,
        metrics: s.metrics.clone(),
        wake: s.workflow_wake.clone(),
        shutdown: s.shutdown.clone(),
    }
}

fn claim_loop(s: &Shared) -> ClaimLoop {
    let c = &s.config;
    ClaimLoop {
        store: s.store.clone(),
        node_id: c.node_id.clone(),
        tick: c.tick,
        lookahead: c.lookahead,
        claim_batch: c.claim_batch,
        round_timeout: (s.store.backend() != Backend::Sqlite).then_some(c.lease_ttl),
        rules: s.rules,
        partitions: s.partitions.clone(),
        wheel: s.wheel.clone(),
        results: s.results.clone(),
        metrics: s.metrics.clone(),
        shutdown: s.shutdown.clone(),
    }
}

fn sweeper(s: &Shared) -> Sweeper {
    let c = &s.config;
    Sweeper {
        store: s.store.clone(),
        directory: s.directory.clone(),
        client: s.client.clone(),
        probe_gate: s.probe_gate.clone(),
        results: s.results.clone(),
        metrics: s.metrics.clone(),
        executor_timeout: c.executor_timeout,
        dead_timeout: c.dead_timeout,
        lost_result_after: c.lost_result_after,
        lost_idle_confirm: c.lost_idle_confirm,
    }
}

/// The HTTP server's state, which takes the shared parts it uses.
fn admin(s: Shared, cluster_secret: String) -> Arc<Admin> {
    Arc::new(Admin {
        config: s.config,
        store: s.store,
        directory: s.directory,
        metrics: s.metrics,
        client: s.client,
        links: s.links,
        cluster_secret,
        partitions: s.partitions,
        wheel: s.wheel,
        results: s.results,
        killing: s.killing,
        withdrawn: s.withdrawn,
        workflows: s.workflow_wake,
        flow: s.flow,
        job_api_permits: crate::rate_limit::KeyedBuckets::new(JOB_API_PERMITS, JOB_API_PERIOD, JOB_API_GROUPS),
        shutdown: s.shutdown,
    })
}

/// Groups whose job API calls are counted at once at most (beyond, the fullest bucket goes).
const JOB_API_GROUPS: usize = 10_000;
/// Calls the XXL-JOB 3.5 job API takes per [`JOB_API_PERIOD`] and group (XXL-JOB's limit).
const JOB_API_PERMITS: u32 = 100;
/// See [`JOB_API_PERMITS`].
const JOB_API_PERIOD: std::time::Duration = std::time::Duration::from_secs(30);

/// SQLite: checkpoints the write-ahead log once a second off the writing connection (see
/// `Store::checkpoint_wal`), until `shutdown`.
async fn run_wal_checkpoints(store: Store, shutdown: CancellationToken) {
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        if let Err(e) = store.checkpoint_wal().await {
            tracing::debug!(error = %e, "WAL checkpoint failed; the writer checkpoints itself past its limit");
        }
    }
}
