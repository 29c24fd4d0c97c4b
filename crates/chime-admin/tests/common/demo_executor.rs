//! Chime's executor with the demo handlers as a real process: `chime executor --demo-handlers`
//! (handlers `demoJobHandler`, `shardingJobHandler`, `sleepJobHandler`, `failJobHandler`,
//! `panicJobHandler` of `chime_executor::demo`, the same as the `chime-demo-executor` binary)
//! registering with an admin over HTTP, as a user runs it. What the end-to-end tests run jobs
//! on.
//!
//! The `chime` binary rather than `chime-demo-executor`: building the latter alone (`cargo build
//! -p chime-executor`) resolves shared dependencies with other features than the workspace
//! build, so every test run would rebuild them, and the test binaries after them.
//!
//! It heart-beats every 30 s (XXL-JOB's `BEAT_TIMEOUT`, not configurable from its command
//! line), so an admin it registers with must use a dead timeout above that: see
//! [`REAL_EXECUTOR_DEAD_TIMEOUT`].

use super::process::{free_port, OwnedProcess};
use super::ACCESS_TOKEN;
use std::process::Command;
use std::time::Duration;

/// A dead timeout for admins whose executors are real processes: XXL-JOB's 90 s, three beat
/// intervals of Chime's executor (30 s) and nine of pyxxl's (10 s). With the in-test default of
/// 4 s a live executor would drop out of its group between two beats.
pub const REAL_EXECUTOR_DEAD_TIMEOUT: Duration = Duration::from_secs(90);

/// A running `chime executor --demo-handlers`, killed (SIGKILL) when dropped.
pub struct DemoExecutor {
    /// The address it registers, as the admin stores it (no trailing slash).
    pub address: String,
    process: OwnedProcess,
    dir: tempfile::TempDir,
}

impl DemoExecutor {
    /// Starts one that registers in `app` with the admin at `admin_base` (with its context path,
    /// e.g. `http://127.0.0.1:8080/xxl-job-admin`), with the tests' access token, listening on
    /// a free loopback port. Does not wait for the registration: see `Api::wait_executors`.
    pub fn start(admin_base: &str, app: &str) -> DemoExecutor {
        Self::start_with(admin_base, app, &[])
    }

    /// [`DemoExecutor::start`] with more command-line flags (`--central-log-bytes 100`, …).
    pub fn start_with(admin_base: &str, app: &str, flags: &[&str]) -> DemoExecutor {
        let bin = super::chime_binary();
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut command = Command::new(bin);
        command
            .args(["executor", "--demo-handlers"])
            .args(["--admin", admin_base, "--appname", app, "--token", ACCESS_TOKEN])
            .args(["--listen", &format!("127.0.0.1:{port}"), "--logdir"])
            .arg(dir.path().join("runs"))
            .args(flags)
            .env("RUST_LOG", "info");
        // Only the flags above: no setting leaks in from the environment (CHIME_ADVERTISE…).
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("CHIME_") {
                command.env_remove(key);
            }
        }
        let process = OwnedProcess::spawn(
            &format!("demo executor {app}@{port}"),
            &mut command,
            Some(&dir.path().join("output.log")),
        );
        DemoExecutor {
            address: format!("http://127.0.0.1:{port}"),
            process,
            dir,
        }
    }

    /// Where it writes its run logs (`--logdir`).
    #[allow(dead_code)] // Not every test binary reads logs.
    pub fn log_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("runs")
    }

    /// `kill -9`: no `registryRemove`, no callback for what it was running.
    pub fn kill_9(&mut self) {
        self.process.kill_9();
    }
}
