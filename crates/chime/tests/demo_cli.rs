//! `chime demo` as a user runs it: the real binary on a temporary database and free ports
//! prints a REST token; with it the demo job's runs are seen succeeding through the REST API
//! (`chime run list --json`, and a raw request without the token is refused), `chime run log` shows the handler's log line read from the demo executor, and SIGTERM stops
//! the process cleanly (exit code 0). A restarted demo keeps its token (in a file only its
//! owner may read) and leaves no run failed for want of its executor.

use std::io::{Read, Write};
use std::process::Command;
use std::time::{Duration, Instant};

mod common;

use common::{free_port, start_demo, Guard, BIN};

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

#[test]
fn demo_runs_its_job_and_stops_on_sigterm() {
    let (admin_port, executor_port) = (free_port(), free_port());
    let dir = std::env::temp_dir().join(format!("chime-demo-{}-{admin_port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut demo, url, token) = start_demo(&dir, admin_port, executor_port);
    let deadline = Instant::now() + Duration::from_secs(60);
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

/// Stops a demo with SIGTERM and waits for it.
fn stop(mut demo: Guard) {
    let pid = demo.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(30);
    while demo.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the demo did not stop after SIGTERM");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The demo's runs, newest first.
fn runs(url: &str, token: &str) -> Vec<serde_json::Value> {
    let out = cli(url, token, &["run", "list", "--limit", "1000", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Waits until the demo job has succeeded `n` times in all; returns all runs.
fn wait_for_successes(url: &str, token: &str, n: usize) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let all = runs(url, token);
        if all.iter().filter(|r| r["status"] == "success").count() >= n {
            return all;
        }
        assert!(
            Instant::now() < deadline,
            "the demo job did not succeed {n} times: {all:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn a_restarted_demo_keeps_its_token_and_fails_no_run() {
    let (admin_port, executor_port) = (free_port(), free_port());
    let dir = std::env::temp_dir().join(format!("chime-demo-restart-{}-{admin_port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (demo, url, token) = start_demo(&dir, admin_port, executor_port);
    let token_file = dir.join("demo.db.api-token");
    let paused_file = dir.join("demo.db.paused-jobs");
    assert_eq!(std::fs::read_to_string(&token_file).unwrap().trim(), token);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the token file is its owner's only: {mode:o}");
    }
    wait_for_successes(&url, &token, 1);
    stop(demo);

    // Restarted several times, each time with the demo job overdue (it fires every 5 s and
    // the demo was down for longer): the token exported after the first start still works,
    // and no run fails because the job fired before the demo executor was back.
    for round in 0..3 {
        std::thread::sleep(Duration::from_secs(6));
        let (demo, url_again, token_again) = start_demo(&dir, admin_port, executor_port);
        assert_eq!(url_again, url);
        assert_eq!(token_again, token, "round {round}: the same token after a restart");
        let before = runs(&url, &token).iter().filter(|r| r["status"] == "success").count();
        let all = wait_for_successes(&url, &token, before + 1);
        let failed: Vec<_> = all.iter().filter(|r| r["status"] == "failed").collect();
        assert!(
            failed.is_empty(),
            "round {round}: runs failed after a restart: {failed:?}"
        );
        assert!(
            !paused_file.exists(),
            "round {round}: the jobs run again, nothing is left to resume"
        );
        stop(demo);
    }

    // A start stopped before the executor came back leaves its jobs stopped and listed in the
    // paused-jobs file: the next start runs them again.
    let (demo, _, _) = start_demo(&dir, admin_port, executor_port);
    let out = cli(&url, &token, &["job", "stop", "1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    stop(demo);
    std::fs::write(&paused_file, "1\n").unwrap();
    let (demo, _, _) = start_demo(&dir, admin_port, executor_port);
    let out = cli(&url, &token, &["--json", "job", "show", "1"]);
    let job: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(job["running"], true, "{job}");
    assert!(!paused_file.exists());
    stop(demo);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Adds a shell-script job to the demo group, triggers it once and returns its run when it ended.
fn run_a_shell_job(url: &str, token: &str, dir: &std::path::Path) -> serde_json::Value {
    let script = dir.join("hello.sh");
    std::fs::write(&script, "echo \"shell says hello from $0\"\n").unwrap();
    let out = cli(
        url,
        token,
        &[
            "job",
            "add",
            "--group",
            "chime-demo",
            "--desc",
            "a script",
            "--glue-type",
            "GLUE_SHELL",
            "--glue-file",
            &script.display().to_string(),
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let job: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = job["id"].as_i64().expect("the new job's id").to_string();
    // Refused by an executor without scripts: the command fails, naming the flag.
    let out = cli(url, token, &["job", "trigger", &id]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() || stderr.contains("--enable-scripts"), "{stderr}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = cli(url, token, &["run", "list", "--job", &id, "--json"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let runs: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        if let Some(run) = runs
            .iter()
            .find(|r| r["status"] == "success" || r["status"] == "failed")
        {
            return run.clone();
        }
        assert!(Instant::now() < deadline, "the script job's run did not end: {runs:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn a_demo_with_enable_scripts_runs_script_jobs_and_one_without_refuses_them() {
    for scripts in [true, false] {
        let (admin_port, executor_port) = (free_port(), free_port());
        let dir = std::env::temp_dir().join(format!("chime-demo-glue-{}-{admin_port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let extra: &[&str] = if scripts { &["--enable-scripts"] } else { &[] };
        let (demo, url, token) = common::start_demo_with(&dir, admin_port, executor_port, extra);
        let run = run_a_shell_job(&url, &token, &dir);
        let id = run["id"].as_i64().unwrap().to_string();
        if scripts {
            assert_eq!(run["status"], "success", "{run}");
            let log = cli(&url, &token, &["run", "log", &id]);
            let text = String::from_utf8_lossy(&log.stdout);
            assert!(
                text.contains("shell says hello"),
                "the script's output in its log: {text}"
            );
        } else {
            assert_eq!(run["status"], "failed", "{run}");
            let why = run.to_string();
            assert!(
                why.contains("--enable-scripts"),
                "the failure says how to allow scripts: {why}"
            );
        }
        stop(demo);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
