//! The demo executor: a handful of handlers that exercise what an admin can observe (success,
//! sharding, long runs, failure, panic), and the command line of `chime-demo-executor` /
//! `examples/demo_executor.rs`.
//!
//! End-to-end tests of the scheduling center start this executor as a real process, and the
//! README's quick start runs it, so the handler names and flags are a stable interface.

use crate::{Executor, ExecutorBuilder, JobContext, JobResult};
use std::path::PathBuf;
use std::time::Duration;

/// Registers `demoJobHandler`, `shardingJobHandler`, `sleepJobHandler`, `failJobHandler`,
/// `panicJobHandler` and `noopJobHandler`.
pub fn register_demo_handlers(builder: ExecutorBuilder) -> ExecutorBuilder {
    builder
        // Logs and returns its parameter: the "hello world" of a job.
        .handler("demoJobHandler", |ctx: JobContext| async move {
            ctx.log(format!("XXL-JOB, Hello World. param={}", ctx.param()));
            JobResult::success_with(ctx.param().to_owned())
        })
        // Shows which shard of a SHARDING_BROADCAST this executor got.
        .handler("shardingJobHandler", |ctx: JobContext| async move {
            ctx.log(format!(
                "shard index = {}, shard total = {}",
                ctx.shard_index(),
                ctx.shard_total()
            ));
            JobResult::success_with(format!("shard {}/{}", ctx.shard_index(), ctx.shard_total()))
        })
        // Sleeps `param` seconds (fractions allowed), logging each second: for block
        // strategies, timeouts, kill and log tailing. Cancellable at every await.
        .handler("sleepJobHandler", |ctx: JobContext| async move {
            let secs: f64 = match ctx.param().trim() {
                "" => 1.0,
                p => p
                    .parse()
                    .map_err(|e| format!("param must be a number of seconds: {e}"))?,
            };
            let total = Duration::from_secs_f64(secs.max(0.0));
            let start = tokio::time::Instant::now();
            let mut tick = 0u64;
            while start.elapsed() < total {
                let left = total - start.elapsed();
                tokio::time::sleep(left.min(Duration::from_secs(1))).await;
                tick += 1;
                ctx.log(format!("slept {tick} s"));
            }
            Ok::<_, String>(JobResult::success_with(format!("slept {secs}")))
        })
        // Fails with its parameter as the message.
        .handler("failJobHandler", |ctx: JobContext| async move {
            let msg = if ctx.param().is_empty() {
                "failJobHandler failed"
            } else {
                ctx.param()
            };
            ctx.log(format!("failing: {msg}"));
            JobResult::fail(msg)
        })
        // Does nothing; its result message is the epoch microseconds at which it started, which
        // the benchmark (`examples/run_load.rs`) turns into trigger-to-start latency.
        .handler("noopJobHandler", |_ctx: JobContext| async move {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            JobResult::success_with(now.as_micros().to_string())
        })
        // Panics: the run fails with the panic message and the executor carries on.
        .handler("panicJobHandler", |ctx: JobContext| async move {
            ctx.log("about to panic");
            if ctx.job_id() >= 0 {
                panic!("panicJobHandler panicked on purpose (param: {})", ctx.param());
            }
            JobResult::success()
        })
}

/// Command-line options of the demo executor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoArgs {
    /// `--admin`: comma-separated admin base addresses.
    pub admin: String,
    /// `--appname`.
    pub appname: String,
    /// `--access-token` (or `--token`).
    pub token: String,
    /// `--listen`.
    pub listen: String,
    /// `--advertise`.
    pub advertise: String,
    /// `--logdir`.
    pub logdir: PathBuf,
    /// `--pack-run-logs`: pack short runs' logs ([`ExecutorBuilder::pack_run_logs`]).
    pub pack_run_logs: bool,
}

impl Default for DemoArgs {
    fn default() -> Self {
        DemoArgs {
            admin: "http://127.0.0.1:8080".to_owned(),
            appname: "chime-demo".to_owned(),
            token: String::new(),
            listen: "127.0.0.1:9999".to_owned(),
            advertise: String::new(),
            logdir: PathBuf::from("./chime-executor-logs"),
            pack_run_logs: false,
        }
    }
}

const USAGE: &str = "usage: demo_executor [--admin URL[,URL…]] [--appname NAME] [--access-token TOKEN] \
[--listen HOST:PORT] [--advertise URL] [--logdir DIR] [--pack-run-logs]
defaults: --admin http://127.0.0.1:8080 --appname chime-demo --listen 127.0.0.1:9999 --logdir ./chime-executor-logs";

impl DemoArgs {
    /// Parses `--flag value` / `--flag=value` pairs (program name excluded).
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<DemoArgs, String> {
        let mut out = DemoArgs::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            if arg == "-h" || arg == "--help" {
                return Err(USAGE.to_owned());
            }
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) => (f.to_owned(), Some(v.to_owned())),
                None => (arg.clone(), None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| args.next())
                    .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
            };
            match flag.as_str() {
                "--pack-run-logs" if inline.is_none() => out.pack_run_logs = true,
                "--admin" => out.admin = value()?,
                "--appname" => out.appname = value()?,
                "--access-token" | "--token" => out.token = value()?,
                "--listen" => out.listen = value()?,
                "--advertise" => out.advertise = value()?,
                "--logdir" => out.logdir = PathBuf::from(value()?),
                _ => return Err(format!("unknown argument '{arg}'\n{USAGE}")),
            }
        }
        Ok(out)
    }

    /// The executor these options describe, with the demo handlers.
    pub fn builder(&self) -> Result<ExecutorBuilder, String> {
        let listen = self
            .listen
            .parse()
            .map_err(|e| format!("--listen '{}': {e}", self.listen))?;
        let builder = Executor::builder()
            .admin_addresses([self.admin.as_str()])
            .app_name(self.appname.clone())
            .access_token(self.token.clone())
            .listen(listen)
            .advertise(self.advertise.clone())
            .log_dir(self.logdir.clone())
            .pack_run_logs(self.pack_run_logs);
        Ok(register_demo_handlers(builder))
    }
}

/// The demo executor's `main`: parses the process arguments, logs to stderr (`RUST_LOG`
/// filters), runs until SIGTERM/SIGINT. Returns the process exit code.
pub fn main() -> std::process::ExitCode {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    let args = match DemoArgs::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(msg) => {
            eprintln!("{msg}");
            return std::process::ExitCode::from(2);
        }
    };
    let executor = match args.builder().and_then(|b| b.build().map_err(|e| e.to_string())) {
        Ok(executor) => executor,
        Err(msg) => {
            eprintln!("demo executor: {msg}");
            return std::process::ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime starts");
    let result = runtime.block_on(executor.run());
    // Blocking handlers that ignored cancellation must not keep the process alive.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("demo executor: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_flag_forms_and_keeps_defaults() {
        let args =
            DemoArgs::parse(["--admin", "http://a:1", "--token=t", "--logdir", "/tmp/x"].map(String::from)).unwrap();
        assert_eq!(args.admin, "http://a:1");
        assert_eq!(args.token, "t");
        assert_eq!(args.logdir, PathBuf::from("/tmp/x"));
        assert_eq!(args.appname, "chime-demo");
        assert_eq!(args.listen, "127.0.0.1:9999");
        assert!(!args.pack_run_logs);
        let args = DemoArgs::parse(["--pack-run-logs", "--access-token", "a"].map(String::from)).unwrap();
        assert!(args.pack_run_logs);
        assert_eq!(args.token, "a");
        assert!(DemoArgs::parse(["--pack-run-logs=yes".to_owned()]).is_err());
        assert!(DemoArgs::parse(["--bogus".to_owned()]).is_err());
        assert!(DemoArgs::parse(["--admin".to_owned()]).is_err());
    }
}
