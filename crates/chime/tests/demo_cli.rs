//! `chime demo` as a user runs it: the real binary on a temporary database and free ports
//! prints a REST token; with it the demo job's runs are seen succeeding through the REST API
//! (`chime run list --json`, and a raw request without the token is refused), `chime run log` shows the handler's log line read from the demo executor, and SIGTERM stops
//! the process cleanly (exit code 0).

use std::io::{BufRead, Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_chime");

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The client's JSON output of `chime …` against the demo.
fn cli(url: &str, token: &str, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .env("CHIME_ADMIN_URL", url)
        .env("CHIME_API_TOKEN", token)
        .output()
        .unwrap()
}

/// The status line of a bare `GET path` (HTTP/1.1 over a plain socket, no token).
fn raw_status(port: u16, path: &str) -> String {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    reply.lines().next().unwrap_or_default().to_owned()
}

/// Kills the demo if the test fails before it stops it.
struct Guard(std::process::Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn demo_runs_its_job_and_stops_on_sigterm() {
    let (admin_port, executor_port) = (free_port(), free_port());
    let dir = std::env::temp_dir().join(format!("chime-demo-{}-{admin_port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let child = Command::new(BIN)
        .args(["demo", "--db", &format!("sqlite://{}/demo.db", dir.display())])
        .args(["--listen", &format!("127.0.0.1:{admin_port}")])
        .args(["--executor-listen", &format!("127.0.0.1:{executor_port}")])
        .args(["--logdir", &dir.join("logs").display().to_string()])
        .env_remove("CHIME_API_TOKEN")
        .env("CHIME_ADMIN_PASSWORD", "demo-test")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut demo = Guard(child);
    // The token is printed in the "export CHIME_ADMIN_URL=… CHIME_API_TOKEN=…" hint.
    let stdout = demo.0.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let (url, token) = loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("the demo prints how to reach it");
        if let Some(rest) = line.trim().strip_prefix("export CHIME_ADMIN_URL=") {
            let (url, token) = rest.split_once(" CHIME_API_TOKEN=").expect("token in the hint");
            break (url.to_owned(), token.to_owned());
        }
    };
    assert_eq!(url, format!("http://127.0.0.1:{admin_port}"));
    assert!(token.len() >= 16, "a generated token: {token}");

    // The demo job fires every 5 seconds; wait for two successful runs.
    let runs = loop {
        let out = cli(&url, &token, &["run", "list", "--status", "success", "--json"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let runs: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        if runs.len() >= 2 {
            break runs;
        }
        assert!(
            Instant::now() < deadline,
            "the demo job did not succeed twice: {runs:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    assert!(runs.iter().all(|r| r["trigger_type"] == "CRON"), "{runs:?}");
    // Without the token the API refuses.
    let anonymous = raw_status(admin_port, "/v1/runs");
    assert!(anonymous.contains(" 401"), "{anonymous}");

    let run_id = runs[0]["id"].as_i64().unwrap().to_string();
    let log = cli(&url, &token, &["run", "log", &run_id]);
    let text = String::from_utf8_lossy(&log.stdout);
    assert!(
        log.status.success(),
        "chime run log failed: {}",
        String::from_utf8_lossy(&log.stderr)
    );
    assert!(
        text.contains("Hello World. param=hello from chime demo"),
        "the handler's log line: {text}"
    );

    let pid = demo.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let stop_deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = demo.0.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < stop_deadline, "the demo did not stop after SIGTERM");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "clean exit after SIGTERM: {status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
