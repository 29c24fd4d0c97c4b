//! Shared pieces of the `chime` command's tests: the binary, free ports, child processes that
//! die with the test, and `chime demo` started on a scratch directory.

#![allow(dead_code)]

pub mod admin;
pub mod tls;

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The `chime` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_chime");

/// A port nothing listens on at the moment.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kills a child process if the test ends before it stopped it.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reads a child's standard output line by line on a thread.
pub fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    rx
}

/// A running `chime demo` with a scratch directory of its own, removed when dropped.
pub struct Demo {
    _process: Guard,
    /// The admin's URL.
    pub url: String,
    /// The REST API token.
    pub token: String,
    /// The scratch directory (database, run logs, files a test writes).
    pub dir: std::path::PathBuf,
}

impl Demo {
    /// `chime` as a client of this demo's admin (its URL and API token in the environment).
    pub fn client(&self) -> Command {
        let mut c = Command::new(BIN);
        c.env("CHIME_ADMIN_URL", &self.url).env("CHIME_API_TOKEN", &self.token);
        c
    }

    /// Runs `chime ARGS` as a client of this demo's admin.
    pub fn run(&self, args: &[&str]) -> std::process::Output {
        self.client().args(args).output().unwrap()
    }

    /// Runs a command that must succeed; its standard output.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "chime {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs a command with `--json` that must succeed; what it printed.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        serde_json::from_str(&self.ok(&all)).unwrap()
    }

    /// Adds a job of the demo's group running `handler`, with the further `job add` flags
    /// `flags`; the job as the admin answered it.
    pub fn add_job(&self, handler: &str, flags: &[&str]) -> serde_json::Value {
        let mut all = vec!["job", "add", "--group", "chime-demo", "--handler", handler];
        all.extend_from_slice(flags);
        self.json(&all)
    }

    /// Runs a command that must fail; its standard error.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "chime {args:?} succeeded: {stderr}");
        stderr
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts `chime demo` on free ports in a new scratch directory named after `tag`.
pub fn demo(tag: &str) -> Demo {
    let (admin_port, executor_port) = (free_port(), free_port());
    let dir = std::env::temp_dir().join(format!("chime-{tag}-{}-{admin_port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (process, url, token) = start_demo(&dir, admin_port, executor_port);
    Demo {
        _process: process,
        url,
        token,
        dir,
    }
}

/// Starts `chime demo` on `dir` (its SQLite database and run logs) and returns it with the URL
/// and API token its "export CHIME_ADMIN_URL=… CHIME_API_TOKEN=…" hint prints.
pub fn start_demo(dir: &Path, admin_port: u16, executor_port: u16) -> (Guard, String, String) {
    start_demo_with(dir, admin_port, executor_port, &[])
}

/// [`start_demo`] with more arguments for `chime demo`.
pub fn start_demo_with(dir: &Path, admin_port: u16, executor_port: u16, extra: &[&str]) -> (Guard, String, String) {
    let mut child = Command::new(BIN)
        .args(["demo", "--db", &format!("sqlite://{}/demo.db", dir.display())])
        .args(["--listen", &format!("127.0.0.1:{admin_port}")])
        .args(["--executor-listen", &format!("127.0.0.1:{executor_port}")])
        .args(["--logdir", &dir.join("logs").display().to_string()])
        .args(extra)
        .env_remove("CHIME_API_TOKEN")
        .env("CHIME_ADMIN_PASSWORD", "demo-test")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let rx = lines_of(&mut child);
    let demo = Guard(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("the demo prints how to reach it");
        if let Some(rest) = line.trim().strip_prefix("export CHIME_ADMIN_URL=") {
            let (url, token) = rest.split_once(" CHIME_API_TOKEN=").expect("token in the hint");
            return (demo, url.to_owned(), token.to_owned());
        }
    }
}
