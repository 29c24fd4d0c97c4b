//! `chime admin`: runs the scheduling center. Settings come from flags, then `CHIME_*`
//! environment variables, then the TOML file given with `--config`, then defaults; every
//! setting is declared once, in `chime_admin::AdminConfig`.

use chime_admin::AdminConfig;
use clap::ArgMatches;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `chime admin`.
#[derive(clap::Args, Debug)]
pub struct AdminArgs {
    /// TOML file with the same settings: each key is a flag's name with underscores for dashes (default_tz, cookie_secure, …).
    #[arg(long, env = "CHIME_CONFIG")]
    pub config: Option<PathBuf>,
    /// The settings, as flags and variables.
    #[command(flatten)]
    pub settings: AdminConfig,
}

impl AdminArgs {
    /// The admin configuration from file, environment and flags; `matches` are this command's,
    /// to tell a value given by flag or variable from a default the file may replace.
    pub fn to_config(&self, matches: &ArgMatches) -> Result<AdminConfig, String> {
        let file = match &self.config {
            Some(path) => {
                Some(std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?)
            }
            None => None,
        };
        let mut config = AdminConfig::from_layers(matches, file.as_deref()).map_err(|e| match &self.config {
            Some(path) => format!("{}: {e}", path.display()),
            None => e,
        })?;
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
pub fn run(args: AdminArgs, matches: &ArgMatches) -> ExitCode {
    init_logging();
    let config = match args.to_config(matches) {
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
    use clap::{Args, Command, FromArgMatches};

    fn parse(args: &[&str]) -> (AdminArgs, ArgMatches) {
        let matches = AdminArgs::augment_args(Command::new("admin"))
            .try_get_matches_from(std::iter::once("admin").chain(args.iter().copied()))
            .unwrap();
        (AdminArgs::from_arg_matches(&matches).unwrap(), matches)
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
        let path = file.to_str().unwrap();
        let (args, matches) = parse(&["--config", path]);
        let c = args.to_config(&matches).unwrap();
        assert_eq!(c.default_time_zone, "Asia/Tokyo");
        assert!(c.cookie_secure);
        assert_eq!(c.lost_sweep, std::time::Duration::from_secs(2));
        let (flag, matches) = parse(&["--config", path, "--default-tz", "UTC"]);
        assert_eq!(flag.to_config(&matches).unwrap().default_time_zone, "UTC");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
