//! `chime executor`: a ready executor process for script jobs and the `shell` handler (and,
//! optionally, the demo handlers). The logic lives in `chime-executor`; this file only maps
//! flags and `CHIME_*` environment variables onto its builder.

use chime_executor::Executor;
use clap::builder::BoolishValueParser;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// `chime executor [FLAGS]` runs an executor; `chime executor list` asks the admin for its
/// executors instead (the name XXL-JOB users know for both).
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ExecutorCommand {
    /// `list`, or nothing to run an executor.
    #[command(subcommand)]
    pub action: Option<ExecutorAction>,
    /// Settings of the executor process.
    #[command(flatten)]
    pub run: ExecutorArgs,
}

/// Subcommands of `chime executor`.
#[derive(clap::Subcommand, Debug)]
pub enum ExecutorAction {
    /// List executors per group with their last heartbeat (through the admin's REST API).
    List {
        /// Only this group (app name).
        #[arg(long)]
        group: Option<String>,
    },
}

/// Arguments of `chime executor` when it runs an executor.
#[derive(clap::Args, Debug)]
pub struct ExecutorArgs {
    /// Admin base addresses, comma-separated, as XXL-JOB's `xxl.job.admin.addresses`
    /// (e.g. `http://admin:8080/xxl-job-admin`, or `http://admin:8080` for Chime). Results and
    /// heartbeats go to `<base>/api/...`. The variable is the client commands' too: the
    /// admin's address has one name (`CHIME_ADMIN`, its old name, is read for this release).
    #[arg(
        long,
        env = "CHIME_ADMIN_URL",
        value_delimiter = ',',
        default_value = "http://127.0.0.1:8080"
    )]
    admin: Vec<String>,

    /// App name: the executor group this executor registers in.
    #[arg(long, env = "CHIME_APPNAME", default_value = "chime-executor")]
    appname: String,

    /// Access token shared with the admin (header XXL-JOB-ACCESS-TOKEN): the same flag and
    /// variable as `chime admin --access-token`. Required when scripts or the shell handler are
    /// enabled, on loopback too: if none is given then, a random one is generated and printed
    /// once at start, to be given to the admin.
    #[arg(
        long,
        visible_alias = "token",
        env = "CHIME_ACCESS_TOKEN",
        default_value = "",
        hide_env_values = true
    )]
    access_token: String,

    /// Address to listen on. The default, 127.0.0.1:9999, is reachable only from this host:
    /// use 0.0.0.0:9999 (with --access-token and usually --advertise) for an admin on another host.
    /// Ignored with --link, which opens no port.
    /// [default: 127.0.0.1:9999]
    #[arg(long, env = "CHIME_EXECUTOR_LISTEN")]
    listen: Option<SocketAddr>,

    /// Address the admin should call, e.g. http://10.0.0.5:9999 or exec.internal:9999. Set it
    /// in containers and behind NAT; by default the listen IP (or, for 0.0.0.0, the first
    /// non-loopback IPv4) is registered. The registered address is logged at start. Ignored
    /// with --link (the admin then knows this executor as link://<id>).
    #[arg(long, env = "CHIME_ADVERTISE")]
    advertise: Option<String>,

    /// Link mode: open no port; dial every admin instead and keep one WebSocket to each, on the
    /// admin's own HTTP port and path, over which the admin runs jobs here. For executors the
    /// admin cannot reach (containers, NAT, no inbound port). Needs a Chime admin: an XXL-JOB
    /// admin has no link, so run in HTTP mode (the default) against one.
    #[arg(long, env = "CHIME_LINK", value_parser = BoolishValueParser::new())]
    link: bool,

    /// With --link: the id this executor links under, listed by the admin as link://<id>
    /// (1-64 ASCII letters, digits, '.', '_', '-'). Default: the host name and 8 random hex
    /// characters, new at every start. Give a fixed id only to one process at a time.
    #[arg(long, env = "CHIME_LINK_ID")]
    link_id: Option<String>,

    /// Directory for run logs (yyyy-MM-dd/<runId>.log), script files and the callback spool.
    #[arg(long, env = "CHIME_LOGDIR", default_value = "./chime-executor-logs")]
    logdir: PathBuf,

    /// Pack the logs of short runs (finished in one go, at most 16 KiB) into
    /// yyyy-MM-dd/packed/<runId/1000>.log instead of one file per run: much faster for
    /// thousands of tiny runs per second on ext4, but a run's log is then no file of its own
    /// to grep or open. The admin pages logs the same either way, across restarts too.
    #[arg(long, env = "CHIME_PACK_RUN_LOGS", value_parser = BoolishValueParser::new())]
    pack_run_logs: bool,

    /// Send at most this many bytes of each finished run's log to the admin, which keeps it so
    /// the log outlives this executor (its end when longer, marked as cut; at most 1 MiB).
    /// 0 sends none. An XXL-JOB admin does not keep logs: sending stops after its first answer.
    #[arg(long, env = "CHIME_CENTRAL_LOG_BYTES", default_value_t = 1024 * 1024)]
    central_log_bytes: usize,

    /// Remove run-log day directories older than this many days (at start and daily);
    /// 0 keeps them forever.
    #[arg(long, env = "CHIME_LOG_RETENTION_DAYS", default_value_t = 30)]
    log_retention_days: i64,

    /// Run script jobs (GLUE_SHELL, GLUE_PYTHON, GLUE_NODEJS, GLUE_PHP, GLUE_POWERSHELL) sent by
    /// the admin. OFF by default: anyone holding the token can then run any code on this host.
    #[arg(long, env = "CHIME_ENABLE_SCRIPTS", value_parser = BoolishValueParser::new())]
    enable_scripts: bool,

    /// Register the `shell` handler, which runs its job parameter with `bash -c`. OFF by
    /// default, for the same reason as --enable-scripts.
    #[arg(long, env = "CHIME_ENABLE_SHELL_HANDLER", value_parser = BoolishValueParser::new())]
    enable_shell_handler: bool,

    /// Also register the demo handlers (demoJobHandler, shardingJobHandler, sleepJobHandler,
    /// failJobHandler, panicJobHandler), to try an admin out.
    #[arg(long, env = "CHIME_DEMO_HANDLERS", value_parser = BoolishValueParser::new())]
    demo_handlers: bool,

    /// On SIGTERM/SIGINT, seconds that running and queued runs may take before they are
    /// killed (and reported as killed).
    #[arg(long, env = "CHIME_SHUTDOWN_GRACE_SECS", default_value_t = 20)]
    shutdown_grace_secs: u64,

    /// Seconds a new connection to the HTTP server has to send a whole request head (and a
    /// kept-alive one from the first byte of its next request) before it is closed.
    #[arg(long, env = "CHIME_HTTP_HEADER_TIMEOUT_SECS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    http_header_timeout_secs: u64,

    /// Seconds after which a kept-alive connection without a request, a request body that sends
    /// nothing or a response the caller does not read, closes the connection.
    #[arg(long, env = "CHIME_HTTP_IDLE_TIMEOUT_SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    http_idle_timeout_secs: u64,

    /// Most connections the HTTP server holds at once; new ones wait beyond. 0: 4,096 (or
    /// half) below the limit on open files, which is raised to the hard limit at start.
    #[arg(long, env = "CHIME_MAX_CONNECTIONS", default_value_t = 0)]
    max_connections: usize,

    /// How often to register with every admin (the heartbeat), as XXL-JOB's executors do every
    /// 30 s. Keep it well below the admins' `--dead-timeout` (90 s): an admin counts an executor
    /// it has not heard for that long as gone.
    #[arg(long, env = "CHIME_BEAT_INTERVAL", default_value = "30s", value_parser = parse_beat_interval)]
    beat_interval: Duration,

    /// TLS: boxed, as three paths would make this the largest command by far.
    #[command(flatten)]
    tls: Box<TlsArgs>,
}

/// The executor's TLS flags.
#[derive(clap::Args, Debug, Clone)]
struct TlsArgs {
    /// Serve HTTPS with this certificate chain (PEM), with --tls-key; the address registered
    /// is then https://. Read again on SIGHUP and when the file changes. Not with --link.
    #[arg(long, env = "CHIME_EXECUTOR_TLS_CERT", value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,

    /// The private key (PEM) of --tls-cert.
    #[arg(long, env = "CHIME_EXECUTOR_TLS_KEY", value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,

    /// CA certificates (PEM) trusted for https:// admins and wss:// links besides the system's
    /// store (which SSL_CERT_FILE can name): an admin with a certificate of a private CA.
    #[arg(long, env = "CHIME_EXECUTOR_TLS_CA", value_name = "FILE")]
    tls_ca: Option<PathBuf>,
}

/// `--beat-interval`: a duration as the admin's settings take it (`30s`, `500ms`, `2`), at
/// least 100 ms (a heartbeat is a database write at every admin).
fn parse_beat_interval(text: &str) -> Result<Duration, String> {
    let d = chime_admin::config::parse_duration(text)?;
    if d < Duration::from_millis(100) {
        return Err(format!("'{text}' is below 100ms"));
    }
    Ok(d)
}

/// The executor's default listen address.
const DEFAULT_LISTEN: &str = "127.0.0.1:9999";

/// The listen address, read under its name of the previous release when the new one is not
/// set, with a warning: the executor's `CHIME_LISTEN` became `CHIME_EXECUTOR_LISTEN`, because
/// the admin reads `CHIME_LISTEN` and one environment could not set both. The old name is read
/// for this release only (`CHIME_ADMIN` is carried over to `CHIME_ADMIN_URL` in `main`).
fn listen_address(args: &ExecutorArgs) -> Result<SocketAddr, String> {
    if let Some(listen) = args.listen {
        return Ok(listen);
    }
    let text = match std::env::var("CHIME_LISTEN").ok().filter(|v| !v.trim().is_empty()) {
        Some(old) => {
            eprintln!("chime executor: CHIME_LISTEN is read for this release only; rename it CHIME_EXECUTOR_LISTEN");
            old
        }
        None => DEFAULT_LISTEN.to_owned(),
    };
    text.trim()
        .parse()
        .map_err(|e| format!("the listen address '{text}': {e}"))
}

/// Runs `chime executor` until SIGTERM or SIGINT.
pub fn run(args: ExecutorArgs) -> ExitCode {
    use tracing_subscriber::EnvFilter;
    // The old name, silently ignored, would leave the executor without its token.
    if std::env::var_os("CHIME_TOKEN").is_some() && std::env::var_os("CHIME_ACCESS_TOKEN").is_none() {
        eprintln!("chime executor: CHIME_TOKEN is no longer read: set CHIME_ACCESS_TOKEN (as for chime admin)");
        return ExitCode::from(2);
    }
    let listen = match listen_address(&args) {
        Ok(listen) => listen,
        Err(e) => {
            eprintln!("chime executor: {e}");
            return ExitCode::from(2);
        }
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(crate::admin_cmd::colours_on_stderr())
        .try_init();

    let runs_code = args.enable_scripts || args.enable_shell_handler;
    let access_token = if runs_code && args.access_token.trim().is_empty() {
        let token = chime_executor::generate_access_token();
        announce_generated_token(&token);
        token
    } else {
        args.access_token
    };
    let mut builder = Executor::builder()
        .admin_addresses(&args.admin)
        .app_name(args.appname)
        .access_token(access_token)
        .listen(listen)
        .advertise(args.advertise.unwrap_or_default())
        .link(args.link)
        .link_id(args.link_id.unwrap_or_default())
        .log_dir(args.logdir)
        .pack_run_logs(args.pack_run_logs)
        .central_run_logs(args.central_log_bytes)
        .log_retention_days(args.log_retention_days)
        .enable_scripts(args.enable_scripts)
        .enable_shell_handler(args.enable_shell_handler)
        .shutdown_grace(Duration::from_secs(args.shutdown_grace_secs))
        .http_header_timeout(Duration::from_secs(args.http_header_timeout_secs))
        .http_idle_timeout(Duration::from_secs(args.http_idle_timeout_secs))
        .max_connections(args.max_connections)
        .registry_interval(args.beat_interval);
    let TlsArgs {
        tls_cert,
        tls_key,
        tls_ca,
    } = *args.tls;
    if let (Some(cert), Some(key)) = (tls_cert, tls_key) {
        builder = builder.tls(cert, key);
    }
    if let Some(ca) = tls_ca {
        builder = builder.tls_ca(ca);
    }
    if args.demo_handlers {
        builder = chime_executor::demo::register_demo_handlers(builder);
    }
    let (executor, runtime) = match crate::ready_to_run("chime executor", crate::Threads::PerCore, builder.build()) {
        Ok(ready) => ready,
        Err(code) => return code,
    };
    let result = runtime.block_on(executor.run());
    // Blocking handlers that ignore cancellation must not keep the process alive.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("chime executor: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Prints a generated token once, on standard error before any log line, with what to do with
/// it: the admin must send the same token or every trigger is refused. (Printed for the person
/// starting the process, like the admin's generated password; never logged through `tracing`.)
fn announce_generated_token(token: &str) {
    eprintln!(
        "chime executor: script jobs / the shell handler are enabled and no access token was given, \
         so one was generated for this process (an executor that runs code must check a token, on loopback too)."
    );
    eprintln!("chime executor: access token: {token}");
    eprintln!(
        "chime executor: give the admin the same token (`chime admin --access-token TOKEN`, or CHIME_ACCESS_TOKEN; \
         an XXL-JOB admin: xxl.job.accessToken). It changes at every start: pass --access-token to keep one."
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ExecutorArgs,
    }

    #[test]
    fn one_file_per_run_unless_packing_is_asked_for() {
        let cli = Cli::try_parse_from(["chime"]).unwrap();
        assert!(!cli.args.pack_run_logs);
        let cli = Cli::try_parse_from(["chime", "--pack-run-logs"]).unwrap();
        assert!(cli.args.pack_run_logs);
    }

    #[test]
    fn link_mode_is_off_unless_asked_for() {
        let cli = Cli::try_parse_from(["chime"]).unwrap();
        assert!(!cli.args.link);
        assert_eq!(cli.args.link_id, None);
        let cli = Cli::try_parse_from(["chime", "--link", "--link-id", "pod-7"]).unwrap();
        assert!(cli.args.link);
        assert_eq!(cli.args.link_id.as_deref(), Some("pod-7"));
    }

    #[test]
    fn the_heartbeat_is_xxl_jobs_unless_set() {
        let cli = Cli::try_parse_from(["chime"]).unwrap();
        assert_eq!(cli.args.beat_interval, Duration::from_secs(30));
        let cli = Cli::try_parse_from(["chime", "--beat-interval", "3s"]).unwrap();
        assert_eq!(cli.args.beat_interval, Duration::from_secs(3));
        assert!(Cli::try_parse_from(["chime", "--beat-interval", "10ms"]).is_err());
        assert!(Cli::try_parse_from(["chime", "--beat-interval", "soon"]).is_err());
    }

    #[test]
    fn the_token_flag_is_named_as_for_the_admin() {
        let cli = Cli::try_parse_from(["chime", "--access-token", "s3cret"]).unwrap();
        assert_eq!(cli.args.access_token, "s3cret");
        let cli = Cli::try_parse_from(["chime", "--token", "s3cret"]).unwrap();
        assert_eq!(cli.args.access_token, "s3cret");
    }
}
