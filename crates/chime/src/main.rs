//! `chime`: the one binary. It parses arguments and calls into the library crates; the logic
//! lives there, where it can be tested without a process.

use clap::{CommandFactory, FromArgMatches, Subcommand};
use std::process::ExitCode;

/// Writes to standard output like `print!`, but a reader that went away (`chime … | head`)
/// ends the process quietly with success instead of a panic: the reader has what it wanted.
macro_rules! out {
    ($($arg:tt)*) => { $crate::write_stdout(format_args!($($arg)*)) };
}

/// [`out!`] with a line end, like `println!`.
macro_rules! outln {
    () => { $crate::write_stdout(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::write_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

mod admin_cmd;
mod client_cmd;
mod cron_cmd;
mod demo_cmd;
mod executor_cmd;
mod import_cmd;

/// mimalloc instead of the system allocator: every fire allocates (HTTP request and reply,
/// database rows, the trigger report), and with the system allocator `malloc`/`free` were a
/// fifth of the admin's CPU at 20,000 fires/s. Measured gain: docs/BENCHMARKS.md.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's options `arena_eager_commit` and `purge_delay` (`mi_option_arena_eager_commit`,
/// `mi_option_purge_delay` in its `mimalloc.h`; the Rust bindings do not name them for the
/// mimalloc 3 they build), and the value Chime gives each.
const MI_OPTIONS: [(&str, libmimalloc_sys::mi_option_t, std::ffi::c_long); 2] =
    [("MIMALLOC_ARENA_EAGER_COMMIT", 4, 0), ("MIMALLOC_PURGE_DELAY", 15, 100)];

/// Memory is committed when used and given back to the system 100 ms after it is freed,
/// instead of arenas committed up front and freed memory kept for a second. The admin's load
/// comes in bursts a second apart (every job due on the same second): with mimalloc's defaults,
/// what a burst freed was never given back before the next burst, and the process stayed at its
/// peak (158–174 MB at 5,000 fires a second). Given back at once (a delay of 0), each freed page
/// is unmapped on its own, and the TLB shootdowns that follow cost up to 15 points of one core
/// at 5,000 fires a second on a virtual machine; 100 ms gathers a burst's pages into few purges
/// and still returns them before the next burst (docs/BENCHMARKS.md). Set here they miss what
/// mimalloc did before `main` (its first arena), so the workspace's `.cargo/config.toml` also
/// compiles mimalloc with arenas committed as used; either variable, when set in the
/// environment, decides instead of this.
fn return_freed_memory_promptly() {
    for (variable, option, value) in MI_OPTIONS {
        if std::env::var_os(variable).is_none() {
            // SAFETY: sets one of mimalloc's option values (a store into its option table);
            // no memory is touched.
            unsafe { libmimalloc_sys::mi_option_set(option, value) }
        }
    }
}

/// Chime: a distributed job scheduler, wire-compatible with XXL-JOB executors.
#[derive(clap::Parser)]
#[command(name = "chime", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    client: client_cmd::ClientOpts,
}

#[derive(Subcommand)]
enum Command {
    /// Work with schedules: print the next fire times of a cron expression.
    Cron(cron_cmd::CronArgs),
    /// Run the scheduling center (admin): storage, scheduler, executor API, REST API.
    // Boxed: the admin's many settings would make every other command as large.
    Admin(Box<admin_cmd::AdminArgs>),
    /// Run an executor (registers with the admin and runs script and shell jobs), or
    /// `executor list` to list the executors the admin knows.
    Executor(executor_cmd::ExecutorCommand),
    /// Try Chime: the admin on SQLite, a demo executor and a demo job, in one process.
    Demo(demo_cmd::DemoArgs),
    /// `group`, `job`, `run`, `export`, `apply`, `workflow`, `api-key`, `calendar`, `limit`,
    /// `queue`: the commands that work through the admin's REST API.
    #[command(flatten)]
    Client(client_cmd::ClientCommand),
    /// Import another scheduler's groups, jobs, users and runs into Chime's database
    /// (`chime import xxl-job --from mysql://…`; see docs/migration.md).
    Import(import_cmd::ImportArgs),
}

fn main() -> ExitCode {
    return_freed_memory_promptly();
    carry_over_old_variable_names();
    // Matches are kept: `chime admin` tells a setting given by flag or variable from a default
    // that its settings file may replace.
    let matches = command().get_matches();
    if let Some(problem) = misplaced_client_flag(&matches) {
        eprintln!("{problem}");
        return ExitCode::from(2);
    }
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match cli.command {
        Command::Cron(args) => cron_cmd::run(args),
        Command::Admin(args) => admin_cmd::run(
            *args,
            matches.subcommand_matches("admin").expect("the admin command matched"),
        ),
        Command::Executor(args) => match args.action {
            Some(executor_cmd::ExecutorAction::List { group }) => client_cmd::run_executor_list(cli.client, group),
            None => executor_cmd::run(args.run),
        },
        Command::Demo(args) => demo_cmd::run(args),
        Command::Client(cmd) => client_cmd::run(cli.client, cmd),
        Command::Import(args) => import_cmd::run(args, cli.client.json),
    }
}

/// The client options (`--admin`, `--api-token`, `--json`) are declared once, globally, so
/// `chime --json job list` and `chime job list --json` both work; commands that are not clients
/// of the REST API keep their own meaning of these names or none. This lists, per such
/// command, the client options it must neither show nor accept.
const NOT_CLIENT_FLAGS: &[(&str, &[&str])] = &[
    // `chime admin --api-token` is the admin's own token (same id, not the global one).
    ("admin", &["admin", "json"]),
    ("demo", &["admin", "json"]),
    ("cron", &["admin", "api_token", "json"]),
    // `chime import` works on the database: `--json` prints its report as JSON.
    ("import", &["admin", "api_token"]),
    // `chime executor --admin` is the executor's own (the admins it registers with); its
    // `list` subcommand is a client and gets the options back (`CLIENT_SUBCOMMANDS`).
    ("executor", &["api_token", "json"]),
];

/// Subcommands of a command of [`NOT_CLIENT_FLAGS`] that are clients of the REST API after all,
/// with the client options their parent does not take.
const CLIENT_SUBCOMMANDS: &[(&str, &str, &[&str])] = &[("executor", "list", &["admin", "api_token", "json"])];

/// The command line definition, with the client options kept out of the commands they do not
/// apply to: a hidden option of the same id there stops the global one from being added
/// (clap adds a global option only where no option has its id), and [`misplaced_client_flag`]
/// refuses it when given.
fn command() -> clap::Command {
    use clap::{Arg, ArgAction};
    let mut cmd = Cli::command();
    for (name, ids) in NOT_CLIENT_FLAGS {
        cmd = cmd.mut_subcommand(*name, |mut sub| {
            for id in *ids {
                let long = if *id == "api_token" { "api-token" } else { id };
                let arg = Arg::new(*id).long(long).hide(true);
                sub = sub.arg(if *id == "json" {
                    arg.action(ArgAction::SetTrue)
                } else {
                    arg
                });
            }
            sub
        });
    }
    for (parent, name, ids) in CLIENT_SUBCOMMANDS {
        // The root's global definitions, so the values reach the client options as for any
        // other client command (clap copies a global argument's value up to the root).
        let client_args: Vec<Arg> = cmd
            .get_arguments()
            .filter(|a| ids.contains(&a.get_id().as_str()))
            .cloned()
            .collect();
        cmd = cmd.mut_subcommand(*parent, |sub| {
            sub.mut_subcommand(*name, |mut client| {
                for arg in client_args {
                    client = client.arg(arg);
                }
                client
            })
        });
    }
    cmd
}

/// An error message when a client option was given to a command it does not apply to.
fn misplaced_client_flag(matches: &clap::ArgMatches) -> Option<String> {
    let (name, m) = matches.subcommand()?;
    let (_, ids) = NOT_CLIENT_FLAGS.iter().find(|(n, _)| *n == name)?;
    if let Some((sub, _)) = m.subcommand() {
        if CLIENT_SUBCOMMANDS.iter().any(|(p, n, _)| *p == name && *n == sub) {
            // A client subcommand: clap copied the values given to it up to this level.
            return None;
        }
    }
    let id = ids
        .iter()
        .find(|id| m.value_source(id) == Some(clap::parser::ValueSource::CommandLine))?;
    Some(format!(
        "chime {name}: --{} is an option of the REST API clients (group, job, run, executor list), not of this command",
        id.replace('_', "-")
    ))
}

/// Variables renamed in this release, still read under their old name when the new one is not
/// set, with a warning: the executor's `CHIME_ADMIN` is now `CHIME_ADMIN_URL`, the name the
/// client commands already used for the same address. Runs before the arguments are parsed
/// (clap reads the variables), while the process has one thread.
fn carry_over_old_variable_names() {
    const RENAMED: &[(&str, &str)] = &[("CHIME_ADMIN", "CHIME_ADMIN_URL")];
    for (old, new) in RENAMED {
        if std::env::var_os(new).is_none() {
            if let Some(value) = std::env::var_os(old).filter(|v| !v.is_empty()) {
                eprintln!("chime: {old} is read for this release only; rename it {new}");
                std::env::set_var(new, value);
            }
        }
    }
}

/// How many threads a command's runtime has.
#[derive(Clone, Copy)]
pub(crate) enum Threads {
    /// One: a command that sends a few requests or runs one task at a time.
    One,
    /// One per core: a server (the admin, an executor, the demo).
    PerCore,
}

/// Tokio's runtime for `command` (`chime admin`, …). When it cannot start, says so on
/// standard error; the caller then exits with a failure.
pub(crate) fn start_runtime(command: &str, threads: Threads) -> Option<tokio::runtime::Runtime> {
    let mut builder = match threads {
        Threads::One => tokio::runtime::Builder::new_current_thread(),
        Threads::PerCore => tokio::runtime::Builder::new_multi_thread(),
    };
    builder
        .enable_all()
        .build()
        .map_err(|e| eprintln!("{command}: cannot start the runtime: {e}"))
        .ok()
}

/// `command`'s checked settings and Tokio's runtime to run it on. Settings refused by their
/// check are said on standard error and exit with 2 (a usage error); a runtime that cannot
/// start exits with a failure: the `Err` is the code to exit with.
pub(crate) fn ready_to_run<T, E: std::fmt::Display>(
    command: &str,
    threads: Threads,
    settings: Result<T, E>,
) -> Result<(T, tokio::runtime::Runtime), ExitCode> {
    let settings = settings.map_err(|e| {
        eprintln!("{command}: {e}");
        ExitCode::from(2)
    })?;
    let runtime = start_runtime(command, threads).ok_or(ExitCode::FAILURE)?;
    Ok((settings, runtime))
}

/// The writer behind [`out!`] and [`outln!`]. Any other write error is reported once on
/// standard error, with a failure exit code.
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        let _ = writeln!(std::io::stderr(), "chime: cannot write the output: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::MI_OPTIONS;

    /// mimalloc was compiled with arenas committed as they are used (`.cargo/config.toml`), so
    /// the arena it reserves before `main` is not committed up front: no option set at start
    /// could change that one.
    #[test]
    fn mimalloc_is_built_to_commit_arenas_as_used() {
        let (variable, option, _) = MI_OPTIONS[0];
        assert_eq!(variable, "MIMALLOC_ARENA_EAGER_COMMIT");
        if std::env::var_os(variable).is_none() {
            // SAFETY: reads one of mimalloc's option values.
            assert_eq!(unsafe { libmimalloc_sys::mi_option_get(option) }, 0);
        }
    }
}
