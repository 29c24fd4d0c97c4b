//! `chime admin`: runs the scheduling center. Settings come from flags, then `CHIME_*`
//! environment variables, then the TOML file given with `--config`, then defaults; every
//! setting is declared once, in `chime_admin::AdminConfig`. `chime admin reset-password` and
//! `chime admin show-token` work on the same database without starting the admin, and
//! `chime admin backup` copies it while the admin runs.

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
    /// A maintenance action instead of running the admin.
    #[command(subcommand)]
    pub action: Option<AdminAction>,
}

/// Maintenance actions of `chime admin`, done on the database directly.
#[derive(clap::Subcommand, Debug)]
pub enum AdminAction {
    /// Set a new password for a console user and end the user's sessions: the way back from a
    /// forgotten password. Works on the database directly (the admin may be running or not).
    /// Without --password-stdin a random password is generated and printed once.
    ResetPassword(ResetPasswordArgs),
    /// Print the executor access token the admin made at its first start (when no
    /// --access-token was given), kept in the database: executors need it. Reads the database
    /// directly, so only someone who can reach it sees the token.
    ShowToken(ShowTokenArgs),
    /// Write a consistent copy of the admin's SQLite database to a new file, while the admin
    /// runs (`chime admin backup --to /var/backups/chime/chime-$(date +%F).db`). PostgreSQL
    /// and MariaDB are backed up with their own tools (pg_dump, mariadb-dump).
    Backup(BackupArgs),
}

/// Arguments of `chime admin backup`.
#[derive(clap::Args, Debug)]
pub struct BackupArgs {
    /// The file to write: a complete SQLite database (no -wal file). Must not exist yet.
    #[arg(long, value_name = "FILE")]
    pub to: PathBuf,
    /// The database.
    #[command(flatten)]
    pub database: MaintenanceDbArgs,
}

/// Where a maintenance action (`chime admin backup`, `show-token`, `reset-password`) finds the
/// database.
#[derive(clap::Args, Debug, Clone)]
pub struct MaintenanceDbArgs {
    /// Database URL, as `chime admin --db` [default: that of `chime admin`: CHIME_DB, the
    /// settings file, then sqlite://chime.db].
    #[arg(long, value_name = "URL")]
    pub db: Option<String>,
    /// Settings file to read the database from, as `chime admin --config`.
    #[arg(long)]
    pub config: Option<PathBuf>,
}

/// Arguments of `chime admin show-token`.
#[derive(clap::Args, Debug)]
pub struct ShowTokenArgs {
    /// The database.
    #[command(flatten)]
    pub database: MaintenanceDbArgs,
}

/// Arguments of `chime admin reset-password`.
#[derive(clap::Args, Debug)]
pub struct ResetPasswordArgs {
    /// The user's login name (the first user is `admin`).
    pub user: String,
    /// The database.
    #[command(flatten)]
    pub database: MaintenanceDbArgs,
    /// Read the new password from the first line of standard input instead of generating
    /// one (`printf '%s\n' "$PW" | chime admin reset-password admin --password-stdin`): a
    /// password given as a flag would stay in the shell history and be visible to every user
    /// of the machine.
    #[arg(long)]
    pub password_stdin: bool,
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
        .with_ansi(colours_on_stderr())
        .try_init();
}

/// Whether log lines may carry ANSI colours: only for a person at a terminal. A file, a pipe
/// or journald would keep the escape codes as noise; `NO_COLOR` (no-color.org) turns them off.
pub(crate) fn colours_on_stderr() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
}

/// Runs `chime admin`.
pub fn run(mut args: AdminArgs, matches: &ArgMatches) -> ExitCode {
    match args.action.take() {
        Some(AdminAction::ResetPassword(reset)) => return reset_password(args, reset, matches),
        Some(AdminAction::ShowToken(show)) => return show_token(args, show, matches),
        Some(AdminAction::Backup(copy)) => return backup(args, copy, matches),
        None => {}
    }
    init_logging();
    let (config, runtime) = match crate::ready_to_run("chime admin", crate::Threads::PerCore, args.to_config(matches)) {
        Ok(ready) => ready,
        Err(code) => return code,
    };
    runtime.block_on(async move {
        let handle = match chime_admin::start(config).await {
            Ok(h) => h,
            Err(e) => {
                eprintln!("chime admin: {e}");
                return ExitCode::FAILURE;
            }
        };
        if let Some(token) = &handle.new_access_token {
            announce_new_token(token);
        }
        let scheme = if handle.admin.config.tls_cert.is_some() {
            "https"
        } else {
            "http"
        };
        eprintln!("chime admin: listening on {scheme}://{}", handle.local_addr);
        if handle.admin.config.api_token.as_deref().is_none_or(str::is_empty) {
            // Otherwise a script with a forgotten token meets only "401" and no reason here.
            eprintln!(
                "chime admin: no --api-token (CHIME_API_TOKEN): the REST API takes console sessions and API keys \
                 (made in the console, page API keys) only"
            );
        }
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

/// Tells the operator, once, the executor access token this first start made: on standard error,
/// like the rest of the start-up lines, but not through the log, which may be shipped elsewhere.
fn announce_new_token(token: &str) {
    eprintln!(
        "chime admin: no --access-token was given, so this admin made one and keeps it in its database:\n\
         \n    {token}\n\n\
         Executors need it: `chime executor --access-token …` (or CHIME_ACCESS_TOKEN), \
         `xxl.job.accessToken=…` for XXL-JOB executors.\n\
         It is shown once; `chime admin show-token` prints it again."
    );
}

/// The database URL of the maintenance action `command`: its own `--db`, else `chime admin`'s
/// layers (flag before the subcommand, `CHIME_DB`, settings file, default), with the action's
/// `--config` in place of the admin's. A setting refused is said on standard error, and the
/// `Err` is the exit code (2, a usage error).
fn maintenance_db(
    command: &str,
    args: &mut AdminArgs,
    database: MaintenanceDbArgs,
    matches: &ArgMatches,
) -> Result<String, ExitCode> {
    if database.config.is_some() {
        args.config = database.config;
    }
    let db = match database.db {
        Some(db) => Ok(db),
        None => args.to_config(matches).map(|c| c.db_url),
    };
    db.map_err(|e| {
        eprintln!("{command}: {e}");
        ExitCode::from(2)
    })
}

/// Runs `chime admin show-token`: prints the kept executor access token on standard output, and
/// only it, so a script can capture it.
fn show_token(mut args: AdminArgs, show: ShowTokenArgs, matches: &ArgMatches) -> ExitCode {
    let db_url = match maintenance_db("chime admin show-token", &mut args, show.database, matches) {
        Ok(db) => db,
        Err(code) => return code,
    };
    if let Some(path) = sqlite_file(&db_url).filter(|p| !p.exists()) {
        eprintln!("chime admin show-token: no database at {}", path.display());
        return ExitCode::FAILURE;
    }
    let Some(runtime) = crate::start_runtime("chime admin show-token", crate::Threads::One) else {
        return ExitCode::FAILURE;
    };
    let found = runtime.block_on(async move {
        let store = chime_admin::store::Store::connect(&db_url)
            .await
            .map_err(|e| e.to_string())?;
        let token = store.secret(chime_admin::store::EXECUTOR_ACCESS_TOKEN).await;
        store.close().await;
        token.map_err(|e| e.to_string())
    });
    match found {
        Ok(Some(token)) => {
            outln!("{token}");
            ExitCode::SUCCESS
        }
        Ok(None) => {
            eprintln!(
                "chime admin show-token: this database keeps no executor access token: the admin was always \
                 started with --access-token (CHIME_ACCESS_TOKEN), which is the token, or has not started yet"
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("chime admin show-token: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `chime admin backup`: `VACUUM INTO` the new file on the database of `--db` (or of
/// `chime admin`'s layers), with the running admin left alone.
fn backup(mut args: AdminArgs, backup: BackupArgs, matches: &ArgMatches) -> ExitCode {
    let db_url = match maintenance_db("chime admin backup", &mut args, backup.database, matches) {
        Ok(db) => db,
        Err(code) => return code,
    };
    // Said before connecting: the server may be out of reach from here, and the advice holds.
    if let Some(advice) = chime_admin::store::Backend::from_url(&db_url).and_then(chime_admin::store::dump_advice) {
        eprintln!("chime admin backup: {advice}");
        return ExitCode::FAILURE;
    }
    if let Some(path) = sqlite_file(&db_url).filter(|p| !p.exists()) {
        eprintln!("chime admin backup: no database at {}", path.display());
        return ExitCode::FAILURE;
    }
    if backup.to.exists() {
        eprintln!(
            "chime admin backup: {} already exists; a backup does not overwrite a file",
            backup.to.display()
        );
        return ExitCode::FAILURE;
    }
    let Some(runtime) = crate::start_runtime("chime admin backup", crate::Threads::One) else {
        return ExitCode::FAILURE;
    };
    let target = backup.to.clone();
    let done = runtime.block_on(async move {
        // As it is: the running admin's schema is its own; a backup changes nothing.
        let store = chime_admin::store::Store::connect_as_it_is(&db_url)
            .await
            .map_err(|e| e.to_string())?;
        let copied = store.backup_to(&target).await;
        store.close().await;
        copied.map_err(|e| e.to_string())
    });
    match done {
        Ok(()) => {
            eprintln!("chime admin backup: database copied to {}", backup.to.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("chime admin backup: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Shortest and longest console password, as the console's own user form requires.
const PASSWORD_CHARS: std::ops::RangeInclusive<usize> = 8..=256;

/// Runs `chime admin reset-password`: the database comes from the subcommand's `--db`, else
/// from `chime admin`'s own layers (flag before the subcommand, `CHIME_DB`, settings file).
fn reset_password(mut args: AdminArgs, reset: ResetPasswordArgs, matches: &ArgMatches) -> ExitCode {
    let db_url = match maintenance_db("chime admin reset-password", &mut args, reset.database, matches) {
        Ok(db) => db,
        Err(code) => return code,
    };
    let password = if reset.password_stdin {
        match read_password_line() {
            Ok(p) => p,
            Err(e) => {
                eprintln!("chime admin reset-password: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        chime_admin::http::auth::random_password()
    };
    // Connecting creates a missing SQLite file: a mistyped path would leave an empty
    // database behind and report no such user, instead of the real mistake.
    if let Some(path) = sqlite_file(&db_url).filter(|p| !p.exists()) {
        eprintln!("chime admin reset-password: no database at {}", path.display());
        return ExitCode::FAILURE;
    }
    let Some(runtime) = crate::start_runtime("chime admin reset-password", crate::Threads::One) else {
        return ExitCode::FAILURE;
    };
    let user = reset.user.clone();
    let hash = chime_admin::http::auth::hash_password(&password);
    let outcome = runtime.block_on(async move {
        let store = chime_admin::store::Store::connect(&db_url)
            .await
            .map_err(|e| e.to_string())?;
        let result = match store.reset_password(&user, &hash).await {
            Ok(ended) => Ok(ended),
            Err(chime_admin::store::StoreError::NotFound(_)) => {
                let known = store.usernames().await.unwrap_or_default();
                // The first few names are enough to spot a typo.
                let mut names = known.iter().take(10).cloned().collect::<Vec<_>>().join(", ");
                if known.is_empty() {
                    names.push_str("none");
                } else if known.len() > 10 {
                    names.push_str(&format!(", … ({} in all)", known.len()));
                }
                Err(format!(
                    "no console user '{user}' in {}; users: {names}",
                    chime_admin::store::redact_url(&db_url),
                ))
            }
            Err(e) => Err(e.to_string()),
        };
        store.close().await;
        result
    });
    match outcome {
        Ok(ended) => {
            if !reset.password_stdin {
                // Standard output, and only this line there, so a script can capture it.
                outln!("{password}");
                eprintln!(
                    "chime admin reset-password: new password of '{}' printed above (shown once)",
                    reset.user
                );
            }
            eprintln!(
                "chime admin reset-password: password of '{}' changed; {ended} session(s) ended",
                reset.user
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("chime admin reset-password: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The file of a SQLite database URL (`sqlite://FILE?…` or `sqlite:FILE`); `None` for an
/// in-memory or server database.
pub(crate) fn sqlite_file(db: &str) -> Option<PathBuf> {
    let rest = db.strip_prefix("sqlite://").or_else(|| db.strip_prefix("sqlite:"))?;
    let file = rest.split('?').next().unwrap_or_default();
    if file.is_empty() || file.contains(":memory:") {
        return None;
    }
    Some(PathBuf::from(file))
}

/// The first line of standard input, without its line end, checked against the console's
/// password rules. At most a little more than the longest password is read, so a file given
/// by mistake is not held in memory.
fn read_password_line() -> Result<String, String> {
    use std::io::{BufRead, Read};
    let limit = (*PASSWORD_CHARS.end() * 4 + 2) as u64;
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .take(limit)
        .read_line(&mut line)
        .map_err(|e| format!("cannot read the password from standard input: {e}"))?;
    let password = line.strip_suffix('\n').unwrap_or(&line);
    let password = password.strip_suffix('\r').unwrap_or(password);
    let n = password.chars().count();
    if !PASSWORD_CHARS.contains(&n) {
        return Err(format!(
            "the password on standard input must be {} to {} characters (got {n})",
            PASSWORD_CHARS.start(),
            PASSWORD_CHARS.end()
        ));
    }
    Ok(password.to_owned())
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
