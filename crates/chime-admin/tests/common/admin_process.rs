//! One real `chime admin` process on a test database, at a fixed port kept across restarts
//! (executors know it), optionally under libfaketime: what the tests of the admin's own outages
//! (`admin_outage.rs`) and of admins sharing a database without waiting for their refresh
//! (`group_changes.rs`) start, stop, freeze and let go on.

use super::process::{free_port, OwnedProcess};
use super::{Api, ACCESS_TOKEN, API_TOKEN};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// libfaketime as Debian installs it.
pub const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// A `chime admin` process; killed with the test.
pub struct AdminProcess {
    process: Option<OwnedProcess>,
    /// Its HTTP port on 127.0.0.1.
    pub port: u16,
    /// Its `--node-id`.
    pub node: String,
    db_url: String,
    args: Vec<String>,
    log: PathBuf,
    /// The file libfaketime reads the clock's offset from, when the admin runs under it.
    faketime: Option<PathBuf>,
}

impl AdminProcess {
    /// Starts `chime admin --node-id node` on `db_url` with `args` besides the tests' usual
    /// ones (tokens, context path, UTC), its output in `dir`, under libfaketime if `faketime`
    /// (its wall clock then follows [`AdminProcess::step_wall_clock`]).
    pub fn start(db_url: &str, node: &str, args: &[&str], dir: &Path, faketime: bool) -> AdminProcess {
        let faketime = faketime.then(|| {
            assert!(
                Path::new(LIBFAKETIME).exists(),
                "libfaketime is not installed at {LIBFAKETIME} (apt-get install faketime)"
            );
            let file = dir.join(format!("{node}.faketime"));
            std::fs::write(&file, "+0\n").unwrap();
            file
        });
        let mut admin = AdminProcess {
            process: None,
            port: free_port(),
            node: node.to_owned(),
            db_url: db_url.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            log: dir.join(format!("{node}.log")),
            faketime,
        };
        admin.spawn();
        admin
    }

    /// Starts the process (again), with the same port, database and settings.
    pub fn spawn(&mut self) {
        let mut command = Command::new(super::chime_binary());
        command
            .args([
                "admin",
                "--db",
                &self.db_url,
                "--listen",
                &format!("127.0.0.1:{}", self.port),
            ])
            .args([
                "--context-path",
                "/xxl-job-admin",
                "--node-id",
                &self.node,
                "--default-tz",
                "UTC",
            ])
            .args(&self.args)
            .env("CHIME_API_TOKEN", API_TOKEN)
            .env("CHIME_ACCESS_TOKEN", ACCESS_TOKEN)
            .env("CHIME_ADMIN_PASSWORD", "admin-process-test")
            .env("RUST_LOG", "info,sqlx=warn");
        // Only the flags above: no setting leaks in from the environment.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            if key.starts_with("CHIME_")
                && !matches!(&*key, "CHIME_API_TOKEN" | "CHIME_ACCESS_TOKEN" | "CHIME_ADMIN_PASSWORD")
            {
                command.env_remove(&*key);
            }
        }
        if let Some(file) = &self.faketime {
            // The wall clock (CLOCK_REALTIME) follows the offset in `file`, read at every call;
            // the monotonic clock stays the machine's.
            command
                .env("LD_PRELOAD", LIBFAKETIME)
                .env("FAKETIME_TIMESTAMP_FILE", file)
                .env("FAKETIME_NO_CACHE", "1")
                .env("DONT_FAKE_MONOTONIC", "1");
        }
        let what = format!("chime admin {}", self.node);
        self.process = Some(OwnedProcess::spawn(&what, &mut command, Some(&self.log)));
    }

    /// Its REST API.
    pub fn api(&self) -> Api {
        Api::new(([127, 0, 0, 1], self.port).into())
    }

    /// Its executor API base, as executors are given it.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}/xxl-job-admin", self.port)
    }

    /// `kill -9`.
    pub fn kill_9(&mut self) {
        self.process.as_mut().expect("the admin runs").kill_9();
    }

    /// Sends `signal` to the process.
    pub fn signal(&self, signal: libc::c_int) {
        let pid = self.process.as_ref().expect("the admin runs").id();
        // SAFETY: kill(2) with the pid of a child this test started and has not reaped.
        let rc = unsafe { libc::kill(pid as libc::pid_t, signal) };
        assert_eq!(rc, 0, "signal {signal}: {}", std::io::Error::last_os_error());
    }

    /// Sets its wall clock `offset` ahead of the machine's (libfaketime's `+300` is 5 min).
    pub fn step_wall_clock(&self, offset: &str) {
        let file = self.faketime.as_ref().expect("the admin runs under libfaketime");
        std::fs::write(file, format!("{offset}\n")).unwrap();
    }

    /// Waits until it answers `/healthz`; returns the partitions it holds.
    pub async fn wait_ready(&self) -> u64 {
        super::eventually(60, &format!("{} to answer", self.node), || self.partitions()).await
    }

    /// The partitions it holds (`/healthz`), or why it did not say.
    pub async fn partitions(&self) -> Result<u64, String> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(1))
            .build()
            .unwrap();
        let url = format!("http://127.0.0.1:{}/healthz", self.port);
        match http.get(&url).send().await {
            Ok(r) if r.status() == 200 => {
                let v: serde_json::Value = r.json().await.map_err(|e| e.to_string())?;
                v["partitions"].as_u64().ok_or(format!("{v}"))
            }
            other => Err(format!("{other:?}")),
        }
    }
}
