//! `chime admin`: runs the scheduling center. Settings come from flags, then `CHIME_*`
//! environment variables, then the TOML file given with `--config`, then defaults.

use chime_admin::Settings;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `chime admin`.
#[derive(clap::Args, Debug, Default)]
pub struct AdminArgs {
    /// TOML file with the same settings: each key is a flag's name with underscores for dashes (default_tz, cookie_secure, …).
    #[arg(long, env = "CHIME_CONFIG")]
    pub config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8080]. Beyond loopback an access token is required.
    #[arg(long, env = "CHIME_LISTEN")]
    pub listen: Option<String>,
    /// Database: sqlite://FILE (created on first start), mysql://USER:PASS@HOST/DB or postgres://… [default: sqlite://chime.db]
    #[arg(long, env = "CHIME_DB")]
    pub db: Option<String>,
    /// Token of the executor protocol (XXL-JOB-ACCESS-TOKEN), checked on /api/* and sent to executors.
    #[arg(long, env = "CHIME_ACCESS_TOKEN", hide_env_values = true)]
    pub access_token: Option<String>,
    /// Bearer token of the REST API (/v1). Without one the REST API refuses every call.
    #[arg(long, env = "CHIME_API_TOKEN", hide_env_values = true)]
    pub api_token: Option<String>,
    /// Also serve the executor API under this prefix, e.g. /xxl-job-admin.
    #[arg(long, env = "CHIME_CONTEXT_PATH")]
    pub context_path: Option<String>,
    /// Connect/read timeout of calls to executors [default: 3s].
    #[arg(long, env = "CHIME_EXECUTOR_TIMEOUT")]
    pub executor_timeout: Option<String>,
    /// How far ahead fires are claimed [default: 3s].
    #[arg(long, env = "CHIME_LOOKAHEAD")]
    pub lookahead: Option<String>,
    /// Claim interval [default: 500ms].
    #[arg(long, env = "CHIME_TICK")]
    pub tick: Option<String>,
    /// A fire later than this is a misfire [default: 5s].
    #[arg(long, env = "CHIME_MISFIRE_THRESHOLD")]
    pub misfire_threshold: Option<String>,
    /// CATCH_UP replays at most this many missed fires per job [default: 100].
    #[arg(long, env = "CHIME_CATCH_UP_MAX")]
    pub catch_up_max: Option<usize>,
    /// CATCH_UP replays at most this many fires per second per job [default: 10].
    #[arg(long, env = "CHIME_CATCH_UP_RATE")]
    pub catch_up_rate: Option<u32>,
    /// An executor without heartbeat for this long is dead [default: 90s].
    #[arg(long, env = "CHIME_DEAD_TIMEOUT")]
    pub dead_timeout: Option<String>,
    /// How often groups and heartbeats are reloaded from the database [default: 5s].
    #[arg(long, env = "CHIME_REGISTRY_REFRESH")]
    pub registry_refresh: Option<String>,
    /// How often runs whose result will not come (executor vanished, result lost) are looked for [default: 5s].
    #[arg(long, env = "CHIME_LOST_SWEEP")]
    pub lost_sweep: Option<String>,
    /// A run of a job without executor timeout that has waited this long for its result is
    /// failed as lost when its executor says the job is neither running nor queued there
    /// [default: 10m].
    #[arg(long, env = "CHIME_LOST_RESULT_AFTER")]
    pub lost_result_after: Option<String>,
    /// Partition lease time, renewed every third [default: 15s].
    #[arg(long, env = "CHIME_LEASE_TTL")]
    pub lease_ttl: Option<String>,
    /// Runs being sent at once over all executors [default: 1024].
    #[arg(long, env = "CHIME_DISPATCH_CONCURRENCY")]
    pub dispatch_concurrency: Option<usize>,
    /// Runs being sent at once to one executor [default: 256].
    #[arg(long, env = "CHIME_PER_EXECUTOR_CONCURRENCY")]
    pub per_executor_concurrency: Option<usize>,
    /// Time zone of jobs created without one [default: this machine's].
    #[arg(long, env = "CHIME_DEFAULT_TZ")]
    pub default_tz: Option<String>,
    /// This admin's name in partition leases [default: host-pid-random].
    #[arg(long, env = "CHIME_NODE_ID")]
    pub node_id: Option<String>,
    /// Mark the console session cookie Secure (when served over https or behind a TLS proxy).
    #[arg(long, env = "CHIME_COOKIE_SECURE")]
    pub cookie_secure: bool,
    /// SMTP server for alarm e-mails: smtps://USER:PASS@HOST:465 or smtp://USER:PASS@HOST:587?tls=required [default: no e-mail].
    #[arg(long, env = "CHIME_SMTP_URL", hide_env_values = true)]
    pub smtp_url: Option<String>,
    /// Sender of alarm e-mails [default: chime@localhost].
    #[arg(long, env = "CHIME_ALARM_FROM")]
    pub alarm_from: Option<String>,
    /// URL that receives a JSON POST for every run that fails for good [default: none].
    #[arg(long, env = "CHIME_ALARM_WEBHOOK", hide_env_values = true)]
    pub alarm_webhook: Option<String>,
    /// Finished runs older than this many days are deleted, daily; 0 keeps them forever [default: 30].
    #[arg(long, env = "CHIME_RUN_RETENTION_DAYS")]
    pub run_retention_days: Option<u32>,
    /// Audit log entries older than this many days are deleted, daily; 0 keeps them forever
    /// [default: 365].
    #[arg(long, env = "CHIME_AUDIT_RETENTION_DAYS")]
    pub audit_retention_days: Option<u32>,
}

impl AdminArgs {
    fn settings(&self) -> Settings {
        Settings {
            listen: self.listen.clone(),
            db: self.db.clone(),
            access_token: self.access_token.clone(),
            api_token: self.api_token.clone(),
            context_path: self.context_path.clone(),
            executor_timeout: self.executor_timeout.clone(),
            lookahead: self.lookahead.clone(),
            tick: self.tick.clone(),
            misfire_threshold: self.misfire_threshold.clone(),
            catch_up_max: self.catch_up_max,
            catch_up_rate: self.catch_up_rate,
            dead_timeout: self.dead_timeout.clone(),
            registry_refresh: self.registry_refresh.clone(),
            lost_sweep: self.lost_sweep.clone(),
            lost_result_after: self.lost_result_after.clone(),
            lease_ttl: self.lease_ttl.clone(),
            dispatch_concurrency: self.dispatch_concurrency,
            per_executor_concurrency: self.per_executor_concurrency,
            default_tz: self.default_tz.clone(),
            node_id: self.node_id.clone(),
            smtp_url: self.smtp_url.clone(),
            alarm_from: self.alarm_from.clone(),
            alarm_webhook: self.alarm_webhook.clone(),
            run_retention_days: self.run_retention_days,
            audit_retention_days: self.audit_retention_days,
            // An absent switch means "not set here", so the file can still turn it on.
            cookie_secure: self.cookie_secure.then_some(true),
        }
    }

    /// The admin configuration from file, environment and flags.
    pub fn to_config(&self) -> Result<chime_admin::AdminConfig, String> {
        let file = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                Settings::from_toml(&text).map_err(|e| format!("{}: {e}", path.display()))?
            }
            None => Settings::default(),
        };
        let mut config = file.overlay(self.settings()).into_config()?;
        config.admin_password = std::env::var("CHIME_ADMIN_PASSWORD").ok().filter(|p| !p.is_empty());
        Ok(config)
    }
}

pub(crate) fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Runs `chime admin`.
pub fn run(args: AdminArgs) -> ExitCode {
    init_logging();
    let config = match args.to_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("chime admin: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("chime admin: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let handle = match chime_admin::start(config).await {
            Ok(h) => h,
            Err(e) => {
                eprintln!("chime admin: {e}");
                return ExitCode::FAILURE;
            }
        };
        eprintln!("chime admin: listening on http://{}", handle.local_addr);
        let shutdown = handle.admin.shutdown.clone();
        tokio::spawn(async move {
            wait_for_signal().await;
            tracing::info!("shutting down");
            shutdown.cancel();
        });
        handle.wait().await;
        ExitCode::SUCCESS
    })
}

/// Waits for Ctrl-C (SIGINT) or SIGTERM.
pub(crate) async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Args, Command};

    /// The TOML key of a flag: its long name with underscores.
    fn key(flag: &str) -> String {
        flag.replace('-', "_")
    }

    /// The long names of every `chime admin` flag, read from clap, so a flag added later is
    /// checked too.
    fn flags() -> Vec<String> {
        let cmd = AdminArgs::augment_args(Command::new("admin"));
        cmd.get_arguments()
            .filter_map(|a| a.get_long())
            .filter(|l| *l != "config")
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn every_flag_is_a_toml_key() {
        let flags = flags();
        assert!(flags.len() > 20, "{flags:?}");
        for flag in flags {
            // A value of the wrong type is refused with another message; only an unknown key
            // says "unknown field".
            for value in ["\"x\"", "1", "true"] {
                if let Err(e) = Settings::from_toml(&format!("{} = {value}", key(&flag))) {
                    assert!(!e.contains("unknown field"), "--{flag} has no TOML key: {e}");
                }
            }
        }
    }

    #[test]
    fn the_file_sets_what_the_flags_set() {
        let dir = std::env::temp_dir().join(format!("chime-admin-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("admin.toml");
        std::fs::write(
            &file,
            "default_tz = \"Asia/Tokyo\"\ncookie_secure = true\nlost_sweep = \"2s\"\n",
        )
        .unwrap();
        let args = AdminArgs {
            config: Some(file.clone()),
            ..Default::default()
        };
        let c = args.to_config().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(c.default_time_zone, "Asia/Tokyo");
        assert!(c.cookie_secure);
        assert_eq!(c.lost_sweep, std::time::Duration::from_secs(2));
        let flag = AdminArgs {
            default_tz: Some("UTC".into()),
            ..Default::default()
        };
        assert_eq!(flag.to_config().unwrap().default_time_zone, "UTC");
    }
}
