//! Configuration ([`ExecutorBuilder`]) and life cycle ([`Executor`], [`ExecutorHandle`]):
//! start the server, register, run, and shut down without losing a result.

use crate::admin::AdminClient;
use crate::callback::{self, CallbackOptions};
use crate::declare::{self, JobDeclaration};
use crate::handler::{Handler, IntoJobResult, JobContext};
use crate::link::{LinkOptions, LinkSet};
use crate::logship::LogShipper;
use crate::runlog::LogWriter;
use crate::runner::{RunEnv, Runners};
use crate::server::{self, ServerState};
use crate::{address, link, registry, runlog, script};
use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Why an executor could not be built or started.
#[derive(Debug, thiserror::Error)]
pub enum ExecutorError {
    /// The configuration is unusable; the message says what to change.
    #[error("invalid executor configuration: {0}")]
    Config(String),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The log directory or callback spool could not be prepared.
    #[error("cannot prepare {path}: {source}")]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Builds an [`Executor`]. Every setting has a default except the handlers and, to register
/// anywhere, the admin addresses and app name.
#[must_use]
pub struct ExecutorBuilder {
    admins: Vec<String>,
    app_name: String,
    access_token: Option<String>,
    listen: SocketAddr,
    advertise: Option<String>,
    serve_limits: chime_serve::Limits,
    tls: Option<(PathBuf, PathBuf)>,
    tls_ca: Option<PathBuf>,
    link: bool,
    link_id: Option<String>,
    log_dir: PathBuf,
    log_retention_days: i64,
    pack_run_logs: bool,
    central_log_bytes: usize,
    handlers: HashMap<String, Handler>,
    duplicate_names: Vec<String>,
    scripts: bool,
    shell_handler: bool,
    registry_interval: Duration,
    callback_retry_interval: Duration,
    callback_batch_size: usize,
    runner_idle_timeout: Duration,
    admin_timeout: Duration,
    shutdown_grace: Duration,
    callback_flush_timeout: Duration,
    api_key: Option<String>,
    declared: Vec<JobDeclaration>,
}

impl Default for ExecutorBuilder {
    fn default() -> Self {
        ExecutorBuilder {
            admins: Vec::new(),
            app_name: String::new(),
            access_token: None,
            listen: SocketAddr::from(([127, 0, 0, 1], 9999)),
            advertise: None,
            serve_limits: chime_serve::Limits::default(),
            tls: None,
            tls_ca: None,
            link: false,
            link_id: None,
            log_dir: PathBuf::from("chime-executor-logs"),
            log_retention_days: 30,
            pack_run_logs: false,
            central_log_bytes: chime_protocol::MAX_RUN_LOG_BYTES,
            handlers: HashMap::new(),
            duplicate_names: Vec::new(),
            scripts: false,
            shell_handler: false,
            registry_interval: Duration::from_secs(chime_protocol::messages::BEAT_TIMEOUT_SECS),
            callback_retry_interval: Duration::from_secs(3),
            callback_batch_size: 500,
            runner_idle_timeout: Duration::from_secs(90),
            admin_timeout: Duration::from_secs(3),
            shutdown_grace: Duration::from_secs(20),
            callback_flush_timeout: Duration::from_secs(5),
            api_key: None,
            declared: Vec::new(),
        }
    }
}

impl ExecutorBuilder {
    /// Admin base addresses, as XXL-JOB's `xxl.job.admin.addresses` gives them
    /// (`http://host:8080/xxl-job-admin`, or `http://host:8080` for Chime and XXL-JOB ≥ 3.4.1).
    /// Results and heartbeats go to `<base>/api/…`. Each entry may itself be a comma list.
    pub fn admin_addresses<I, S>(mut self, addresses: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        for entry in addresses {
            for address in entry.as_ref().split(',') {
                let address = address.trim();
                if !address.is_empty() {
                    self.admins.push(address.to_owned());
                }
            }
        }
        self
    }

    /// The executor's app name: the admin groups executors by it (XXL-JOB's "AppName").
    pub fn app_name(mut self, name: impl Into<String>) -> Self {
        self.app_name = name.into();
        self
    }

    /// The shared access token (`XXL-JOB-ACCESS-TOKEN`), checked on every incoming call and
    /// sent on every call to the admin. Blank means none — acceptable only on loopback, and
    /// never with script jobs or the shell handler (see [`ExecutorBuilder::enable_scripts`]);
    /// [`crate::generate_access_token`] makes a strong one.
    pub fn access_token(mut self, token: impl Into<String>) -> Self {
        let token = token.into();
        self.access_token = if token.trim().is_empty() { None } else { Some(token) };
        self
    }

    /// Where the HTTP server listens. Default `127.0.0.1:9999`: reachable only from this host
    /// until you choose otherwise. Port 0 picks a free port. Ignored in [link
    /// mode](ExecutorBuilder::link), which opens no port.
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = addr;
        self
    }

    /// The address the admin should call, e.g. `http://10.0.0.5:9999` or `exec.svc:9999`.
    /// Set it whenever the executor runs in a container or behind NAT; without it the bound IP
    /// (or, for `0.0.0.0`, the first non-loopback IPv4) is used. Ignored in [link
    /// mode](ExecutorBuilder::link): the admin knows a linked executor as `link://<id>`.
    pub fn advertise(mut self, address: impl Into<String>) -> Self {
        let address = address.into();
        self.advertise = if address.trim().is_empty() { None } else { Some(address) };
        self
    }

    /// Serve HTTPS with this certificate chain (PEM: the executor's certificate, then the
    /// intermediates) and its private key (PEM). Both are read again on SIGHUP and when they
    /// change, for new connections. The address registered with the admin is then
    /// `https://…`. Not for [link mode](ExecutorBuilder::link), which opens no port: its
    /// links are TLS when the admin address is `https://`.
    pub fn tls(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.tls = Some((cert.into(), key.into()));
        self
    }

    /// CA certificates (PEM) trusted for `https://` admins and `wss://` links besides the
    /// system's store (which `SSL_CERT_FILE` can name): an admin with a certificate of a
    /// private CA. Verification is never turned off.
    pub fn tls_ca(mut self, ca: impl Into<PathBuf>) -> Self {
        self.tls_ca = Some(ca.into());
        self
    }

    /// A new connection to the HTTP server must send a whole request head within this, and so
    /// must a kept-alive one from the first byte of its next request; else it is closed, so
    /// peers that send slowly or stop halfway hold no connection. Default 10 s.
    pub fn http_header_timeout(mut self, timeout: Duration) -> Self {
        self.serve_limits.header_timeout = timeout;
        self
    }

    /// A kept-alive connection without a request, a request body that sends nothing or a
    /// response the caller does not read, for this long, is closed. Default 60 s.
    pub fn http_idle_timeout(mut self, timeout: Duration) -> Self {
        self.serve_limits.idle_timeout = timeout;
        self
    }

    /// Most connections the HTTP server holds at once; beyond, new ones wait to be accepted.
    /// Default (0): 4,096 (or half) below the limit on open files, which the executor raises
    /// to the hard limit when it starts its server.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.serve_limits.max_connections = max;
        self
    }

    /// Link mode: instead of opening a port for the admin to call, the executor dials every
    /// admin and keeps one WebSocket to each, on the admin's own HTTP port and context path
    /// (`<admin>/api/link`), over which the admin calls it and it reports back. Use it when no
    /// admin can reach the executor: in a container, behind NAT, where no inbound port may be
    /// opened. Off by default (HTTP mode, what XXL-JOB admins speak: an XXL-JOB admin has no
    /// link endpoint).
    ///
    /// A link the admin closed is dialed again with a growing, jittered backoff (0.5 s up to
    /// 30 s); one found dead (the admin silent and its ping unanswered for 5 s: a cut line) at
    /// once and then every second while the network stays down. Meanwhile results wait in the
    /// spool or go to the admin by HTTP, and the admin stops routing runs here once the
    /// registration lapses.
    pub fn link(mut self, enabled: bool) -> Self {
        self.link = enabled;
        self
    }

    /// The id this executor links under; the admin lists it as `link://<id>`. 1 to 64 ASCII
    /// letters, digits, `.`, `_` or `-`. Default: the host name and 8 random hex characters,
    /// new at every start; set a stable id only if exactly one process uses it at a time (a
    /// second link with the same id replaces the first at the admin).
    pub fn link_id(mut self, id: impl Into<String>) -> Self {
        let id = id.into();
        self.link_id = if id.trim().is_empty() {
            None
        } else {
            Some(id.trim().to_owned())
        };
        self
    }

    /// Where run logs (`yyyy-MM-dd/<runId>.log`), script files (`gluesource/`) and the
    /// callback spool (`callback-spool/`) live. Default `./chime-executor-logs`.
    pub fn log_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.log_dir = dir.into();
        self
    }

    /// Day directories of run logs older than this many days are removed at start and daily.
    /// Below 1: keep forever. Default 30.
    pub fn log_retention_days(mut self, days: i64) -> Self {
        self.log_retention_days = days;
        self
    }

    /// Packs the logs of short runs, many runs to a file, instead of giving every run its own
    /// `yyyy-MM-dd/<runId>.log`. Off by default.
    ///
    /// With packing, a run that finished in one go with a log of at most 16 KiB becomes a
    /// record in `yyyy-MM-dd/packed/<runId / 1000>.log`; runs that wait (their log is paged
    /// while it grows), larger logs, and runs whose handler asked for
    /// [`JobContext::log_path`] keep a file of their own. It buys throughput where creating a
    /// file per run is the bottleneck — on ext4 thousands of tiny runs per second — at the
    /// price of the one greppable file per run that operators (and XXL-JOB habits) expect.
    /// `/log` answers the same either way, and reads logs written under the other setting, so
    /// it can be changed across a restart.
    pub fn pack_run_logs(mut self, pack: bool) -> Self {
        self.pack_run_logs = pack;
        self
    }

    /// Up to how many bytes of each finished run's log are sent to the admin, which keeps them
    /// so that the log outlives this executor (default 1 MiB, the most a Chime admin keeps; a
    /// longer log is sent as its end, marked as cut). `0` sends no logs. An XXL-JOB admin does
    /// not keep logs: after its first "unknown endpoint" answer none are sent.
    pub fn central_run_logs(mut self, max_bytes: usize) -> Self {
        self.central_log_bytes = max_bytes.min(chime_protocol::MAX_RUN_LOG_BYTES);
        self
    }

    /// Registers an async handler under `name` (the admin's "JobHandler" field).
    pub fn handler<F, Fut, R>(self, name: impl Into<String>, f: F) -> Self
    where
        F: Fn(JobContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoJobResult + 'static,
    {
        self.register(name, Handler::new(f))
    }

    /// Registers a blocking (synchronous) handler under `name`; it runs on tokio's blocking
    /// pool so that it cannot stall the server or other jobs.
    pub fn blocking_handler<F, R>(self, name: impl Into<String>, f: F) -> Self
    where
        F: Fn(JobContext) -> R + Send + Sync + 'static,
        R: IntoJobResult + 'static,
    {
        self.register(name, Handler::blocking(f))
    }

    /// Registers a prepared [`Handler`] (with init/destroy hooks) under `name`. A name used
    /// twice makes [`ExecutorBuilder::build`] fail, as XXL-JOB refuses "naming conflicts".
    pub fn register(mut self, name: impl Into<String>, handler: Handler) -> Self {
        let name = name.into();
        if self.handlers.insert(name.clone(), handler).is_some() {
            self.duplicate_names.push(name);
        }
        self
    }

    /// Runs script jobs (GLUE_SHELL, GLUE_PYTHON, GLUE_NODEJS, GLUE_PHP, GLUE_POWERSHELL)
    /// sent by the admin. Off by default: it lets anyone holding the token run code here.
    ///
    /// Requires an [access token](ExecutorBuilder::access_token), on loopback too:
    /// [`ExecutorBuilder::build`] refuses the configuration without one. Loopback is no
    /// boundary for code execution — every local user and process can reach it, and so can a
    /// web page open in a browser on this host.
    pub fn enable_scripts(mut self, enabled: bool) -> Self {
        self.scripts = enabled;
        self
    }

    /// Registers the `shell` handler, which runs its parameter with `bash -c`. Off by default,
    /// and requires an access token, for the same reasons as
    /// [scripts](ExecutorBuilder::enable_scripts). So does registering
    /// [`crate::script::shell_handler`] under a name of your own.
    pub fn enable_shell_handler(mut self, enabled: bool) -> Self {
        self.shell_handler = enabled;
        self
    }

    /// Seconds between registry heartbeats. Default 30 (the admin drops an executor silent
    /// for 90).
    pub fn registry_interval(mut self, interval: Duration) -> Self {
        self.registry_interval = interval;
        self
    }

    /// How long to wait before re-sending results the admins did not accept. Default 3 s
    /// (XXL-JOB: 30 s).
    pub fn callback_retry_interval(mut self, interval: Duration) -> Self {
        self.callback_retry_interval = interval;
        self
    }

    /// Most results per callback request. Default 500.
    pub fn callback_batch_size(mut self, size: usize) -> Self {
        self.callback_batch_size = size.max(1);
        self
    }

    /// How long a job's runner lives without work before it is reaped (its destroy hook
    /// runs). Default 90 s.
    pub fn runner_idle_timeout(mut self, timeout: Duration) -> Self {
        self.runner_idle_timeout = timeout;
        self
    }

    /// Connect and response timeout of calls to the admin. Default 3 s (XXL-JOB's).
    pub fn admin_timeout(mut self, timeout: Duration) -> Self {
        self.admin_timeout = timeout;
        self
    }

    /// On shutdown, how long running and queued runs may take before they are killed.
    /// Default 20 s (below the usual 30 s before an orchestrator sends SIGKILL).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// On shutdown, how long to try delivering the last results before leaving them in the
    /// spool for the next start. Default 5 s.
    pub fn callback_flush_timeout(mut self, timeout: Duration) -> Self {
        self.callback_flush_timeout = timeout;
        self
    }

    /// A job this service declares (Chime admins only): applied to the admin's jobs at each
    /// start with the [`api_key`](Self::api_key), created or brought up to the declaration,
    /// never deleted. See [`JobDeclaration`].
    pub fn declare_job(mut self, job: JobDeclaration) -> Self {
        self.declared.push(job);
        self
    }

    /// A Chime API key (`chk_…`) that edits this executor's group: what applies the
    /// [declared jobs](Self::declare_job). Make one in the console (page *API keys*) or with
    /// `chime api-key create NAME --role editor --group APP`.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into()).filter(|k| !k.trim().is_empty());
        self
    }

    /// Checks the configuration.
    ///
    /// Fails when script jobs or a handler that runs arbitrary commands (the `shell` handler)
    /// are enabled without an access token, whatever the listen address.
    pub fn build(mut self) -> Result<Executor, ExecutorError> {
        if self.serve_limits.header_timeout.is_zero() || self.serve_limits.idle_timeout.is_zero() {
            return Err(ExecutorError::Config(
                "the HTTP header and idle timeouts must be positive".to_owned(),
            ));
        }
        if let Some(name) = self.duplicate_names.first() {
            return Err(ExecutorError::Config(format!(
                "handler name [{name}] registered twice (naming conflicts)"
            )));
        }
        if self.handlers.keys().any(|n| n.trim().is_empty()) {
            return Err(ExecutorError::Config("a handler name is blank".to_owned()));
        }
        for admin in &self.admins {
            if !(admin.starts_with("http://") || admin.starts_with("https://")) {
                return Err(ExecutorError::Config(format!(
                    "admin address '{admin}' must start with http:// or https:// (e.g. http://host:8080/xxl-job-admin)"
                )));
            }
        }
        if !self.admins.is_empty() && self.app_name.trim().is_empty() {
            return Err(ExecutorError::Config(
                "an app name is required to register with the admin".to_owned(),
            ));
        }
        if let Some(id) = &self.link_id {
            chime_protocol::link::validate_executor_id(id)
                .map_err(|e| ExecutorError::Config(format!("link id: {e}")))?;
        }
        if self.link {
            if self.tls.is_some() {
                return Err(ExecutorError::Config(
                    "a TLS certificate is for the HTTP server, and link mode opens none: the links are TLS \
                     when the admin address is https://"
                        .to_owned(),
                ));
            }
            if self.admins.is_empty() {
                return Err(ExecutorError::Config(
                    "link mode needs at least one admin address to dial".to_owned(),
                ));
            }
            // Both travel as headers of the link's upgrade request.
            if axum::http::HeaderValue::from_str(&self.app_name).is_err() {
                return Err(ExecutorError::Config(
                    "in link mode the app name must be valid in an HTTP header (no control characters)".to_owned(),
                ));
            }
            if self
                .access_token
                .as_deref()
                .is_some_and(|t| axum::http::HeaderValue::from_str(t).is_err())
            {
                return Err(ExecutorError::Config(
                    "the access token must be valid in an HTTP header (no control characters)".to_owned(),
                ));
            }
        }
        let runs_code = self.scripts || self.shell_handler || self.handlers.values().any(|h| h.runs_code);
        if runs_code && self.access_token.is_none() {
            // Loopback included: every local user and process can reach a loopback port, and
            // so can any web page open in a browser here. The token is what proves the caller
            // is the admin. In link mode it is what the admin checks before it takes the link:
            // without one, whatever answers at the admin's address could run code here.
            let exposure = if self.link {
                "links to its admins without an access token: whatever answers at an admin address \
                 could run any command here"
                    .to_owned()
            } else {
                format!(
                    "listens on {} without an access token: anyone who can reach this port (on loopback: any \
                     local process, or a web page in a browser on this host) could run any command here",
                    self.listen
                )
            };
            return Err(ExecutorError::Config(format!(
                "script jobs / the shell handler are enabled and the executor {exposure}. Set an access token, \
                 the same as the admin's (chime_executor::generate_access_token() makes one), or disable scripts \
                 and the shell handler."
            )));
        }
        if !self.declared.is_empty() {
            if self.api_key.is_none() || self.admins.is_empty() {
                return Err(ExecutorError::Config(
                    "declared jobs are applied to an admin with an API key: set admin addresses and api_key".to_owned(),
                ));
            }
            let mut keys = std::collections::HashSet::new();
            if let Some(twice) = self.declared.iter().find(|j| !keys.insert(j.key())) {
                return Err(ExecutorError::Config(format!("job [{}] declared twice", twice.key())));
            }
        }
        if self.shell_handler {
            if self.handlers.contains_key("shell") {
                return Err(ExecutorError::Config(
                    "handler name [shell] registered twice (naming conflicts)".into(),
                ));
            }
            self.handlers.insert("shell".to_owned(), script::shell_handler());
        }
        Ok(Executor { config: self })
    }
}

/// A configured executor, ready to [`start`](Executor::start) or [`run`](Executor::run).
pub struct Executor {
    config: ExecutorBuilder,
}

impl Executor {
    /// A builder with the defaults.
    pub fn builder() -> ExecutorBuilder {
        ExecutorBuilder::default()
    }

    /// Runs until SIGTERM or SIGINT (Ctrl-C), then shuts down gracefully.
    pub async fn run(self) -> Result<(), ExecutorError> {
        self.run_until(termination_signal()).await
    }

    /// Runs until `shutdown` resolves, then shuts down gracefully: running and queued runs
    /// finish (up to the grace period), their results are delivered (or stay spooled), and
    /// the executor leaves the registry.
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) -> Result<(), ExecutorError> {
        let handle = self.start().await?;
        shutdown.await;
        handle.shutdown().await;
        Ok(())
    }

    /// Starts the executor in the background and returns a handle to stop it.
    ///
    /// When this returns, the server is listening (in link mode: the links are being dialed),
    /// results left in the spool by a previous process are being re-sent, and the first
    /// registry heartbeat is on its way.
    pub async fn start(self) -> Result<ExecutorHandle, ExecutorError> {
        let config = self.config;
        let io_err = |path: &PathBuf| {
            let path = path.clone();
            move |source| ExecutorError::Io { path, source }
        };
        std::fs::create_dir_all(&config.log_dir).map_err(io_err(&config.log_dir))?;
        let tls_error = |e: chime_serve::tls::TlsError| ExecutorError::Config(format!("TLS: {e}"));
        let client_tls = chime_serve::tls::client_config(config.tls_ca.as_deref()).map_err(tls_error)?;
        let client_tls_for_api = client_tls.clone();
        let server_tls = match &config.tls {
            Some((cert, key)) => Some(chime_serve::tls::ServerTls::from_files(cert, key).map_err(tls_error)?),
            None => None,
        };
        let links = config.link.then(|| LinkSet::new(&config.admins, config.admin_timeout));
        let admin = AdminClient::new(
            config.admins.clone(),
            config.access_token.clone(),
            config.admin_timeout,
            links.clone(),
            client_tls.clone(),
        );
        let spool_dir = config.log_dir.join("callback-spool");
        let pipeline = callback::start(
            &spool_dir,
            admin.clone(),
            CallbackOptions {
                retry_interval: config.callback_retry_interval,
                max_batch: config.callback_batch_size,
            },
        )
        .map_err(io_err(&spool_dir))?;
        let logs = LogWriter::start(config.pack_run_logs).map_err(io_err(&config.log_dir))?;
        let (shipper, shipper_task) = if admin.has_admins() && config.central_log_bytes > 0 {
            let (shipper, task) = LogShipper::start(
                admin.clone(),
                config.app_name.trim().to_owned(),
                config.central_log_bytes,
            );
            (Some(shipper), Some(task))
        } else {
            (None, None)
        };
        let runners = Runners::new(RunEnv {
            log_dir: config.log_dir.clone(),
            sink: pipeline.sink.clone(),
            logs: logs.clone(),
            shipper,
            idle_timeout: config.runner_idle_timeout,
            #[cfg(test)]
            finish_probe: None,
        });

        // In link mode no port is opened: the admin reaches the executor through its links.
        let reach = match links {
            Some(links) => Reach::Linked(links),
            None => {
                let bind_err = |source| ExecutorError::Bind {
                    addr: config.listen,
                    source,
                };
                let open_files = chime_serve::raise_descriptor_limit();
                tracing::debug!(
                    open_files,
                    max_connections = config.serve_limits.connection_cap(),
                    "limits on open files and connections"
                );
                let listener = tokio::net::TcpListener::bind(config.listen).await.map_err(bind_err)?;
                let local_addr = listener.local_addr().map_err(bind_err)?;
                Reach::Listening(listener, local_addr)
            }
        };
        // Uptime counts from here: calls are accepted from now on.
        let instance = registry::Instance::new(config.handlers.keys());
        let app = server::router(Arc::new(ServerState {
            runners: runners.clone(),
            handlers: Arc::new(config.handlers.clone()),
            token: config.access_token.clone(),
            scripts_enabled: config.scripts,
            glue_dir: config.log_dir.join("gluesource"),
        }));
        let (local_addr, advertised, serving) = match reach {
            Reach::Listening(listener, local_addr) => {
                let advertised = address::advertised(config.advertise.as_deref(), local_addr, server_tls.is_some());
                tracing::info!(
                    listen = %local_addr,
                    advertised = %advertised,
                    app_name = %config.app_name,
                    admins = ?config.admins,
                    instance = instance.id(),
                    scripts = config.scripts,
                    pack_run_logs = config.pack_run_logs,
                    "chime executor started; the admin will call the advertised address"
                );
                if config.access_token.is_none() && !local_addr.ip().is_loopback() {
                    tracing::warn!("no access token: any caller that reaches {local_addr} can trigger jobs");
                }
                let stop = CancellationToken::new();
                let server = {
                    let stop = stop.clone();
                    let limits = config.serve_limits;
                    tokio::spawn(chime_serve::serve_with(listener, app, limits, server_tls, async move {
                        stop.cancelled().await
                    }))
                };
                (Some(local_addr), advertised, Serving::Http { stop, server })
            }
            Reach::Linked(links) => {
                let executor_id = config
                    .link_id
                    .clone()
                    .unwrap_or_else(|| link::default_executor_id(instance.id()));
                let advertised = chime_protocol::link::address(&executor_id);
                let admins: Vec<String> = config
                    .admins
                    .iter()
                    .map(|a| crate::admin::without_credentials(a))
                    .collect();
                tracing::info!(
                    advertised = %advertised,
                    app_name = %config.app_name,
                    instance = instance.id(),
                    scripts = config.scripts,
                    pack_run_logs = config.pack_run_logs,
                    "chime executor started; linked mode: no port is opened; dialing {}",
                    admins.join(", ")
                );
                let registration: link::Registration = {
                    let (app_name, address, instance) = (config.app_name.clone(), advertised.clone(), instance.clone());
                    Arc::new(move || registry::body(&app_name, &address, &instance))
                };
                let links = link::start(
                    links,
                    admin.clone(),
                    app,
                    LinkOptions {
                        app_name: config.app_name.clone(),
                        executor_id,
                        token: config.access_token.clone(),
                        connect_timeout: config.admin_timeout.max(Duration::from_secs(10)),
                        tls: Arc::new(client_tls),
                    },
                    registration,
                );
                (None, advertised, Serving::Linked(links))
            }
        };

        let background = CancellationToken::new();
        let registry_task = admin.has_admins().then(|| {
            tokio::spawn(registry::heartbeat(
                admin.clone(),
                config.app_name.clone(),
                advertised.clone(),
                instance.clone(),
                config.registry_interval,
                config.link,
                background.clone(),
            ))
        });
        // Declared jobs are applied once per start, beside the registration: a handler a job
        // names is served from now on.
        let declare_task = config
            .api_key
            .clone()
            .filter(|_| !config.declared.is_empty())
            .map(|key| {
                let http = reqwest::Client::builder()
                    .use_preconfigured_tls(client_tls_for_api.clone())
                    .timeout(config.admin_timeout.max(Duration::from_secs(10)))
                    .build()
                    .expect("a reqwest client with rustls builds");
                let (bases, app, jobs) = (
                    config.admins.clone(),
                    config.app_name.trim().to_owned(),
                    config.declared.clone(),
                );
                tokio::spawn(async move { declare::apply(&http, &bases, &key, &app, &jobs).await })
            });
        let retention_task = tokio::spawn(retention_loop(
            config.log_dir.clone(),
            config.log_retention_days,
            background.clone(),
        ));

        let shutdown = CancellationToken::new();
        let done = {
            let shutdown = shutdown.clone();
            let advertised = advertised.clone();
            tokio::spawn(async move {
                shutdown.cancelled().await;
                tracing::info!("shutting down: finishing runs, delivering results, leaving the registry");
                background.cancel();
                if let Some(task) = declare_task {
                    task.abort();
                }
                if let Some(task) = registry_task {
                    let _ = task.await;
                }
                let _ = retention_task.await;
                runners.shutdown(config.shutdown_grace).await;
                // The writer hands on the last results once their logs are written.
                let _ = tokio::task::spawn_blocking(move || logs.stop()).await;
                pipeline.finish(config.callback_flush_timeout).await;
                // Logs after results: a result is owed to the admin, a log is a convenience.
                if let Some(task) = shipper_task {
                    task.finish(config.callback_flush_timeout).await;
                }
                if admin.has_admins() {
                    registry::remove(&admin, &config.app_name, &advertised, &instance).await;
                }
                // Last: the links carry the last results and registryRemove.
                serving.stop().await;
                tracing::info!("chime executor stopped");
            })
        };
        Ok(ExecutorHandle {
            local_addr,
            advertised,
            shutdown,
            done,
        })
    }
}

async fn retention_loop(log_dir: PathBuf, days: i64, stop: CancellationToken) {
    if days < 1 {
        return;
    }
    loop {
        let dir = log_dir.clone();
        let removed = tokio::task::spawn_blocking(move || runlog::remove_old_day_dirs(&dir, days))
            .await
            .unwrap_or_default();
        if !removed.is_empty() {
            tracing::info!(count = removed.len(), days, "removed old run log directories");
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(24 * 3600)) => {}
            _ = stop.cancelled() => return,
        }
    }
}

/// Resolves on SIGTERM or SIGINT.
pub async fn termination_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

/// How the admin will reach the executor, decided before the instance starts counting.
enum Reach {
    /// HTTP mode: the bound listener and its address.
    Listening(tokio::net::TcpListener, SocketAddr),
    /// Link mode: the links, not yet dialed.
    Linked(LinkSet),
}

/// How the admin reaches the executor: its HTTP server, or its links.
enum Serving {
    Http {
        stop: CancellationToken,
        server: tokio::task::JoinHandle<()>,
    },
    Linked(link::Links),
}

impl Serving {
    async fn stop(self) {
        match self {
            Serving::Http { stop, server } => {
                stop.cancel();
                let _ = server.await;
            }
            Serving::Linked(links) => links.stop().await,
        }
    }
}

/// A running executor.
pub struct ExecutorHandle {
    local_addr: Option<SocketAddr>,
    advertised: String,
    shutdown: CancellationToken,
    done: tokio::task::JoinHandle<()>,
}

impl ExecutorHandle {
    /// The address the server is bound to (useful with port 0); `None` in [link
    /// mode](ExecutorBuilder::link), where no port is opened.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local_addr
    }

    /// The address registered with the admin: `http://…` in HTTP mode, `link://<id>` in link
    /// mode.
    pub fn advertised_address(&self) -> &str {
        &self.advertised
    }

    /// Shuts down gracefully and waits until done: new triggers are refused, running and
    /// queued runs finish (or are killed after the grace period and reported so), results
    /// are delivered (or stay spooled), then `registryRemove` is sent and the server stops.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        let _ = self.done.await;
    }
}
